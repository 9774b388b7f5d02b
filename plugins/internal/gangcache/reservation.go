package gangcache

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Reservation holds nodes for a gang that smaller gangs keep outrunning: a gang whose quorum
// the cluster could hold, but whose room is taken piece by piece as soon as it frees. While it
// lasts, gangs of the same or a lower priority may not use the nodes, so the room they free
// adds up until the starving gang fits. Pods outside gangs are not held back.
type Reservation struct {
	// Key is the gang the nodes are held for; Priority its pods' priority.
	Key      string
	Priority int32
	// Since is when the gang became unplaceable: among gangs of one priority, the one that
	// waits longest holds the reservation.
	Since time.Time
	Nodes sets.Set[string]
	// Expires ends a reservation its gang no longer renews (it is renewed on every failed
	// attempt of the gang).
	Expires time.Time
	// Yields, when set, names gangs of no higher priority the reservation does not hold back:
	// waiting quorums that queue ahead of its gang may use the nodes now rather than leave them
	// idle (only gangs that came later starve it).
	Yields func(key string, prio int32) bool
}

// Excludes reports whether the reservation keeps a member of gang key, of priority prio, off
// node at now.
func (r *Reservation) Excludes(key string, prio int32, node string, now time.Time) bool {
	return r.Active(now) && r.Key != key && prio <= r.Priority && r.Nodes.Has(node) && (r.Yields == nil || !r.Yields(key, prio))
}

// Active reports whether the reservation holds at now (a nil one never does).
func (r *Reservation) Active(now time.Time) bool { return r != nil && now.Before(r.Expires) }

// outranks reports whether r should replace cur.
func (r *Reservation) outranks(cur *Reservation, now time.Time) bool {
	switch {
	case !cur.Active(now), cur.Key == r.Key:
		return true
	case r.Priority != cur.Priority:
		return r.Priority > cur.Priority
	default:
		return r.Since.Before(cur.Since)
	}
}

// reservations is the profile's one reservation. A single one at a time keeps reservations
// from carving the cluster up between starving gangs, which could then all wait forever.
type reservations struct{ current atomic.Pointer[Reservation] }

// Reservation is the current reservation, nil when there is none. It is read on every Filter
// call, so it costs one atomic load.
func (c *Cache) Reservation() *Reservation { return c.reservations.current.Load() }

// Reserve installs r unless an active reservation of a gang that outranks it holds; it reports
// whether r holds now.
func (c *Cache) Reserve(r *Reservation, now time.Time) bool {
	for {
		cur := c.reservations.current.Load()
		if cur != nil && !r.outranks(cur, now) {
			return false
		}
		if c.reservations.current.CompareAndSwap(cur, r) {
			return true
		}
	}
}

// Release ends gang key's reservation, if it holds one.
func (c *Cache) Release(key string) {
	for {
		cur := c.reservations.current.Load()
		if cur == nil || cur.Key != key || c.reservations.current.CompareAndSwap(cur, nil) {
			return
		}
	}
}
