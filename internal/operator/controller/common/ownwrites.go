package common

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnWrites remembers the resourceVersion of a writer's last write to each object, so that a
// pass running on an informer cache that does not show that write yet leaves the object alone
// instead of writing it again from the stale copy: a second create (AlreadyExists), or a
// write conditional on the old resourceVersion (a conflict). It assumes what every etcd-backed
// kube-apiserver serves, resourceVersions that are integers growing with each write, as
// client-go's integer resource-version mutation cache does; an unparsable one is never behind.
type OwnWrites struct {
	mu      sync.Mutex
	ttl     time.Duration
	now     func() time.Time
	byKey   map[types.NamespacedName]ownWrite
	sweepAt int
}

type ownWrite struct {
	resourceVersion uint64
	at              time.Time
}

// OwnWriteTTL is how long a writer trusts its record of a write whose watch event has not
// arrived: an informer is normally milliseconds behind, and an object someone else deleted
// right after the write is written again after this.
const OwnWriteTTL = 5 * time.Second

// CacheBehindRetry is how soon a writer that left an object alone, because the cache did not
// show its last write yet, looks at it again.
const CacheBehindRetry = 50 * time.Millisecond

// NewOwnWrites returns an empty record whose entries are trusted for ttl: a write whose watch
// event never arrives (a lost event, or a delete by someone else before the cache saw the
// write) holds its object back no longer than that.
func NewOwnWrites(ttl time.Duration) *OwnWrites {
	return &OwnWrites{ttl: ttl, now: time.Now, byKey: map[types.NamespacedName]ownWrite{}, sweepAt: 64}
}

// Wrote records a successful write; obj carries the resourceVersion the apiserver returned.
// A nil record keeps nothing.
func (w *OwnWrites) Wrote(obj client.Object) {
	if w == nil {
		return
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	w.byKey[client.ObjectKeyFromObject(obj)] = ownWrite{resourceVersion: rv, at: now}
	if len(w.byKey) >= w.sweepAt {
		for k, e := range w.byKey {
			if now.Sub(e.at) > w.ttl {
				delete(w.byKey, k)
			}
		}
		w.sweepAt = max(64, 2*len(w.byKey))
	}
}

// Behind reports whether the cache's copy of the object (cached, nil when the cache has none)
// predates the last write to it. Once the cache has caught up, the entry is dropped.
func (w *OwnWrites) Behind(key types.NamespacedName, cached client.Object) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.byKey[key]
	if !ok {
		return false
	}
	if w.now().Sub(e.at) > w.ttl {
		delete(w.byKey, key)
		return false
	}
	if cached == nil {
		return true
	}
	rv, err := strconv.ParseUint(cached.GetResourceVersion(), 10, 64)
	if err != nil || rv >= e.resourceVersion {
		delete(w.byKey, key)
		return false
	}
	return true
}

// Forget drops the object's entry (it was deleted on purpose; a new one may be created).
func (w *OwnWrites) Forget(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byKey, key)
}
