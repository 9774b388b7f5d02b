// Package watchtest streams what a test watches without losing events to a closed connection.
package watchtest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Stream sends the events a watch without a resourceVersion would: an ADDED event for each of
// existing (a list's items), then every change after the list's resourceVersion. A plain watch
// ends whenever its connection does (a loaded apiserver closes watchers that fall behind) and
// loses what follows; this one resumes from the last resourceVersion it saw. The channel closes
// when ctx ends or when the watch cannot resume (its history is gone), so a reader that sees
// it close early knows it may have missed events.
func Stream(ctx context.Context, existing []runtime.Object, resourceVersion string,
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)) (<-chan watch.Event, error) {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &toolscache.ListWatch{WatchFuncWithContext: watchFunc})
	if err != nil {
		return nil, err
	}
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
				if !ok || ev.Type == watch.Error || !send(ev) {
					return
				}
			}
		}
	}()
	return out, nil
}
