package controller_test

import (
	"context"
	"sync"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/watchtest"
)

// watchAll streams the events of list's kind in the test namespace as a watch without a
// resourceVersion does, but survives the end of its connection (watchtest.Stream): a plain
// watch lost events under load (TestScaleOutOfAHundredPods saw 65 of 100 pods created). stop
// ends it and waits for its channel to close; the test's cleanup calls stop too.
func (e *env) watchAll(list client.ObjectList) (events <-chan watch.Event, stop func()) {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.cluster.Config, client.Options{Scheme: e.c.Scheme()})
	require.NoError(e.t, err)
	require.NoError(e.t, wc.List(e.ctx, list, client.InNamespace(e.ns)))
	existing, err := meta.ExtractList(list)
	require.NoError(e.t, err)
	ctx, cancel := context.WithCancel(e.ctx)
	stream, err := watchtest.Stream(ctx, existing, list.GetResourceVersion(), func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return wc.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(e.ns), &client.ListOptions{Raw: &opts})
	})
	if err != nil {
		cancel()
		require.NoError(e.t, err)
	}
	// out closes only after stream has: stop can wait for that.
	out, done := make(chan watch.Event), make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for ev := range stream {
			select {
			case out <- ev:
			case <-ctx.Done():
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	e.t.Cleanup(stop)
	return out, stop
}
