package gangcache

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// The plugins' per-gang state, kept in the gang's record (see the package doc).

// update runs fn on the record of key under the write lock, making the record when create.
func (c *Cache) update(key string, create bool, fn func(*entry)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.gangs[key]
	if e == nil {
		if !create {
			return false
		}
		e = c.entry(key)
	}
	fn(e)
	return true
}

// view runs fn on the record of key under the read lock; false when there is none.
func (c *Cache) view(key string, fn func(*entry)) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil {
		return false
	}
	fn(e)
	return true
}

var _ ledger.Store = &Cache{}

// UpdateAttempt makes the gang records the ledger's Store: the gang plugin's attempt state is
// part of the gang's one record.
func (c *Cache) UpdateAttempt(key string, create bool, fn func(*ledger.Gang)) bool {
	return c.update(key, create, func(e *entry) { fn(&e.attempt) })
}

// QueueTime is where gang namespace/name sorts in the queue. It runs on every comparison of the
// scheduling queue: it allocates nothing.
func (c *Cache) QueueTime(namespace, name string) QueueTime {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.byName[namespace][name]; e != nil {
		return e.queue
	}
	return QueueTime{}
}

// SetQueueTime records when the gang queues from; onlyIfUnset keeps an existing one.
func (c *Cache) SetQueueTime(key string, t time.Time, onlyIfUnset bool) {
	c.update(key, true, func(e *entry) {
		if e.queue.At.IsZero() || !onlyIfUnset {
			e.queue.At = t
		}
	})
}

// Arrive records when the gang's first member reached the queue.
func (c *Cache) Arrive(key string, t time.Time) {
	var known bool
	c.view(key, func(e *entry) { known = !e.queue.Arrival.IsZero() })
	if known {
		return
	}
	c.update(key, true, func(e *entry) {
		if e.queue.Arrival.IsZero() {
			e.queue.Arrival = t
		}
	})
}

// MarkQueued records that the gang's quorum passed PreEnqueue: it is in the queue, about to be
// tried.
func (c *Cache) MarkQueued(key string) {
	var queued bool
	c.view(key, func(e *entry) { queued = e.queued })
	if queued {
		return
	}
	c.update(key, true, func(e *entry) { e.queued = true })
}

// Unqueue records that the gang was attempted (or turned away); it reports whether it was
// marked queued.
func (c *Cache) Unqueue(key string) (was bool) {
	c.update(key, false, func(e *entry) { was, e.queued = e.queued, false })
	return was
}

// Queued reports whether the gang's quorum waits in the queue, not yet attempted.
func (c *Cache) Queued(key string) (queued bool) {
	c.view(key, func(e *entry) { queued = e.queued })
	return queued
}

// AddElastic records that members of the gang wait for other gangs' quorums (elastic members,
// or a gang letting one ahead of it go first): no cluster event brings them back when those
// quorums are placed or go away.
func (c *Cache) AddElastic(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elastic[key] = struct{}{}
}

// TakeElastic returns the gangs AddElastic recorded and forgets them.
func (c *Cache) TakeElastic() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.elastic))
	for k := range c.elastic {
		out = append(out, k)
	}
	clear(c.elastic)
	return out
}

// Plan is the topology plugin's placement of the gang's current attempt.
func (c *Cache) Plan(key string) (p Plan) {
	c.view(key, func(e *entry) { p = e.plan })
	return p
}

// SetPlan records the placement of the gang's current attempt.
func (c *Cache) SetPlan(key string, p Plan) {
	c.update(key, true, func(e *entry) { e.plan = p })
}

// MissPreference records that a member of PodGang uid fit no node of its preferred domain: the
// gang's later attempts search every node.
func (c *Cache) MissPreference(key string, uid types.UID) {
	c.update(key, true, func(e *entry) { e.preferenceMissed = uid })
}

// MissedPreference reports whether a member of PodGang uid missed its preferred domain.
func (c *Cache) MissedPreference(key string, uid types.UID) (missed bool) {
	c.view(key, func(e *entry) { missed = e.preferenceMissed == uid })
	return missed
}

// Written is the status writer's last write of the gang's status.
func (c *Cache) Written(key string) (w Written, ok bool) {
	c.view(key, func(e *entry) { w, ok = e.written, !e.written.At.IsZero() })
	return w, ok
}

// SetWritten records the status writer's last write; a zero w forgets it.
func (c *Cache) SetWritten(key string, w Written) {
	c.update(key, !w.At.IsZero(), func(e *entry) { e.written = w })
}

// ShouldTell reports whether an event about gang key saying what is due at now: the first one,
// or one interval after the same was last sent (which it then records). Events about a gang
// without a record are not throttled.
func (c *Cache) ShouldTell(key, what string, now time.Time, interval time.Duration) bool {
	tell := true
	c.update(key, false, func(e *entry) {
		if last, sent := e.told[what]; sent && now.Sub(last) < interval {
			tell = false
			return
		}
		if e.told == nil {
			e.told = map[string]time.Time{}
		}
		e.told[what] = now
		for k, t := range e.told {
			if now.Sub(t) >= interval {
				delete(e.told, k)
			}
		}
	})
	return tell
}

// NoDomainKey is where the topology plugin's PreFilter tells, in a member's CycleState, that no
// domain can hold the member's gang: the gang plugin's PostFilter then treats the gang as short
// of room as a gang its own pre-check turned away, without knowing which plugin said so.
const NoDomainKey fwk.StateKey = "grove.io/no-domain"

// NoDomain is what NoDomainKey holds.
type NoDomain struct {
	// Reason says why no domain holds the gang; Cause is it as data (a ledger.Wait* constant).
	Reason, Cause string
}

// Clone implements fwk.StateData; it is never modified once written.
func (n *NoDomain) Clone() fwk.StateData { return n }

// NoDomainIn returns what the topology plugin told in state, nil when it told nothing.
func NoDomainIn(state fwk.CycleState) *NoDomain {
	if state == nil {
		return nil
	}
	data, err := state.Read(NoDomainKey)
	if err != nil {
		return nil
	}
	n, _ := data.(*NoDomain)
	return n
}
