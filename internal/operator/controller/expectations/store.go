// Package expectations remembers the pods a controller has created or deleted but whose watch
// events its informer cache has not delivered yet. A reconcile that runs on a stale cache adds
// the pending creations to what it sees and subtracts the pending deletions, so it neither
// creates duplicate pods nor deletes one twice (the pattern of kube-controller-manager's
// ControllerExpectations, keyed by pod UID).
package expectations

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultTTL bounds how long an expectation is trusted: if its watch event never shows up
// (a lost event), the controller falls back to what its cache says.
const DefaultTTL = 5 * time.Minute

// Creation is a pod the controller created and has not seen in its cache yet.
type Creation struct {
	UID types.UID
	// Index is the pod index (hostname suffix) the pod was created with; it stays taken.
	Index int
}

// Pending is what a reconcile must account for on top of its cache.
type Pending struct {
	// Creations not yet in the cache, by ascending index.
	Creations []Creation
	// Deletions of pods that the cache still shows as live.
	Deletions map[types.UID]bool
}

// Store holds the expectations of every owner (e.g. "namespace/podclique").
type Store struct {
	mu     sync.Mutex
	ttl    time.Duration
	now    func() time.Time
	owners map[string]*ownerExpectations
}

type ownerExpectations struct {
	creations map[types.UID]creation
	deletions map[types.UID]time.Time
}

type creation struct {
	index int
	at    time.Time
}

// New returns an empty store whose expectations expire after ttl.
func New(ttl time.Duration) *Store {
	return &Store{ttl: ttl, now: time.Now, owners: map[string]*ownerExpectations{}}
}

func (s *Store) owner(key string) *ownerExpectations {
	o, ok := s.owners[key]
	if !ok {
		o = &ownerExpectations{creations: map[types.UID]creation{}, deletions: map[types.UID]time.Time{}}
		s.owners[key] = o
	}
	return o
}

// ExpectCreation records a pod the owner just created.
func (s *Store) ExpectCreation(key string, uid types.UID, index int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owner(key).creations[uid] = creation{index: index, at: s.now()}
}

// ExpectDeletion records a pod the owner is about to delete.
func (s *Store) ExpectDeletion(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owner(key).deletions[uid] = s.now()
}

// CancelDeletion forgets a deletion that failed.
func (s *Store) CancelDeletion(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.owners[key]; ok {
		delete(o.deletions, uid)
	}
}

// Observed is called from the informer's event handler: the pod was added to, or removed
// from, the cache. A removed pod is pending no more, as a creation or a deletion: this also
// covers a pod created and deleted before a reconcile could list it. An added pod stays
// pending until a reconcile's list shows it (Pending): a reconcile that listed the pods just
// before the event, and settles its expectations just after, would otherwise count the pod
// neither way and create it again.
func (s *Store) Observed(key string, uid types.UID, gone bool) {
	if !gone {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.owners[key]
	if !ok {
		return
	}
	delete(o.creations, uid)
	delete(o.deletions, uid)
}

// Pending settles the owner's expectations against the pods its cache lists (live[uid] is
// true for a pod that still counts: not terminating, not finished) and returns what is still
// in flight.
func (s *Store) Pending(key string, live map[types.UID]bool) Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Pending{Deletions: map[types.UID]bool{}}
	o, ok := s.owners[key]
	if !ok {
		return p
	}
	now := s.now()
	for uid, c := range o.creations {
		if _, seen := live[uid]; seen || now.Sub(c.at) > s.ttl {
			delete(o.creations, uid)
			continue
		}
		p.Creations = append(p.Creations, Creation{UID: uid, Index: c.index})
	}
	for uid, at := range o.deletions {
		if isLive, seen := live[uid]; !seen || !isLive || now.Sub(at) > s.ttl {
			delete(o.deletions, uid)
			continue
		}
		p.Deletions[uid] = true
	}
	if len(o.creations) == 0 && len(o.deletions) == 0 {
		delete(s.owners, key)
	}
	sort.Slice(p.Creations, func(i, j int) bool { return p.Creations[i].Index < p.Creations[j].Index })
	return p
}

// Forget drops every expectation of an owner (it is gone).
func (s *Store) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owners, key)
}
