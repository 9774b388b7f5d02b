//go:build e2e

package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/ai-dynamo/grove/e2e/framework"
)

// watchPods streams the events of the pods matching selector in ns ("" for every namespace):
// first an ADDED event for each pod that exists, then every change. A plain watch ends whenever
// its connection does, and whatever happened after is lost; this one resumes from the last
// resourceVersion it saw. Its channel closes when ctx ends, or when the watch cannot resume
// (its history is gone): the caller then knows it may have missed events.
func watchPods(ctx context.Context, t *testing.T, env *framework.Env, ns, selector string) <-chan watch.Event {
	t.Helper()
	pods := env.Clientset.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return pods.Watch(ctx, opts)
		},
	})
	require.NoError(t, err)
	out := make(chan watch.Event)
	go func() {
		defer close(out)
		defer rw.Stop()
		send := func(ev watch.Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for i := range list.Items {
			if !send(watch.Event{Type: watch.Added, Object: &list.Items[i]}) {
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok || ev.Type == watch.Error {
					return
				}
				if _, isPod := ev.Object.(*corev1.Pod); isPod && !send(ev) {
					return
				}
			}
		}
	}()
	return out
}
