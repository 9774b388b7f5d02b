package preemption

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// inflight remembers, per preemptor, the victims it is waiting for. Until they are gone the
// preemptor is not attempted again (PreEnqueue) and preempts nothing more; the deletion of its
// last victim brings it back (the queueing hint).
type inflight struct {
	mu    sync.Mutex
	byKey map[string]*pending
}

type pending struct {
	victims map[types.UID]types.NamespacedName
	what    string
	// expires ends the wait even if a victim never goes away (a stuck finalizer).
	expires time.Time
}

func newInflight() *inflight { return &inflight{byKey: map[string]*pending{}} }

// start records the victims of preemptor key.
func (f *inflight) start(key string, pods [][]*v1.Pod, what string, expires time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for k, p := range f.byKey {
		if !now.Before(p.expires) {
			delete(f.byKey, k)
		}
	}
	p := &pending{victims: map[types.UID]types.NamespacedName{}, what: what, expires: expires}
	for _, unit := range pods {
		for _, pod := range unit {
			p.victims[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		}
	}
	f.byKey[key] = p
}

// known reports whether key preempted and its wait has not expired: its pods may have been
// held back by PreEnqueue.
func (f *inflight) known(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.byKey[key]
	return p != nil && time.Now().Before(p.expires)
}

// gone records that a victim was deleted.
func (f *inflight) gone(key string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.byKey[key]; p != nil {
		delete(p.victims, uid)
	}
}

// remaining is how many of key's victims still exist (exists tells), and what they belong to.
// The record is kept until it expires, so that every held-back pod of the preemptor is let
// back by the queueing hint, not only the first one asked.
func (f *inflight) remaining(key string, exists func(types.NamespacedName, types.UID) bool, now time.Time) (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.byKey[key]
	if p == nil {
		return 0, ""
	}
	if !now.Before(p.expires) {
		delete(f.byKey, key)
		return 0, ""
	}
	for uid, ref := range p.victims {
		if !exists(ref, uid) {
			delete(p.victims, uid)
		}
	}
	return len(p.victims), p.what
}
