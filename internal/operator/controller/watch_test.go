package controller_test

import (
	"context"
	"sync"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchAll streams the events of list's kind in the test namespace the way a watch without a
// resourceVersion does (an ADDED event for each object that exists, then every change), but it
// survives the end of its connection: a loaded apiserver closes watchers that fall behind, and a
// plain watch then loses whatever follows (TestScaleOutOfAHundredPods saw 65 of 100 pods
// created). It resumes from the last resourceVersion it saw. stop ends it and closes the
// channel; the test's cleanup calls stop too.
func (e *env) watchAll(list client.ObjectList) (events <-chan watch.Event, stop func()) {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.cluster.Config, client.Options{Scheme: e.c.Scheme()})
	require.NoError(e.t, err)
	require.NoError(e.t, wc.List(e.ctx, list, client.InNamespace(e.ns)))
	existing, err := meta.ExtractList(list)
	require.NoError(e.t, err)
	ctx, cancel := context.WithCancel(e.ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(e.ns), &client.ListOptions{Raw: &opts})
		},
	})
	if err != nil {
		cancel()
		require.NoError(e.t, err)
	}
	out := make(chan watch.Event)
	done := make(chan struct{})
	go func() {
		defer close(done)
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
		for _, obj := range existing {
			if !send(watch.Event{Type: watch.Added, Object: obj}) {
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				// An Error event is a history the watch cannot resume from; the channel's end
				// tells the test it may have missed events.
				if !ok || ev.Type == watch.Error || !send(ev) {
					return
				}
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
