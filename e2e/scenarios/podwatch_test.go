//go:build e2e

package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/watchtest"
)

// watchPods streams the events of the pods matching selector in ns ("" for every namespace):
// first an ADDED event for each pod that exists, then every change, resuming a watch whose
// connection ended (watchtest.Stream). Its channel closes when ctx ends, or when the watch
// cannot resume (its history is gone): the caller then knows it may have missed events.
func watchPods(ctx context.Context, t *testing.T, env *framework.Env, ns, selector string) <-chan watch.Event {
	t.Helper()
	pods := env.Clientset.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	existing := make([]runtime.Object, len(list.Items))
	for i := range list.Items {
		existing[i] = &list.Items[i]
	}
	events, err := watchtest.Stream(ctx, existing, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = selector
		return pods.Watch(ctx, opts)
	})
	require.NoError(t, err)
	return events
}
