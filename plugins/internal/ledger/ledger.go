package ledger

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Policy holds the timings of gang attempts.
type Policy struct {
	// InitialBackoff is how long a gang waits after its first failed attempt; each further
	// failure doubles it up to MaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// EventInterval is the least time between two events about one unplaceable gang.
	EventInterval time.Duration
}

// Ledger decides gang attempts. It keeps no state of its own: each gang's Gang lives in a Store
// (in grove-scheduler, inside the gang's one record in the gang cache), which serialises the
// calls. It is safe for concurrent use: the scheduling cycle, binding goroutines (Permit
// timeouts, Unreserve) and informer handlers all report to it.
type Ledger struct {
	clock  clock.PassiveClock
	policy Policy
	store  Store
}

// Store holds the Gang of each PodGang.
type Store interface {
	// UpdateAttempt runs fn on the Gang of key under the store's lock; fn calls nothing outside.
	// With create, a missing record is made (a zero Gang); without, fn is not run and ok is
	// false.
	UpdateAttempt(key string, create bool, fn func(*Gang)) (ok bool)
}

// MapStore is a Store of its own, for a Ledger used alone.
type MapStore struct {
	mu    sync.Mutex
	gangs map[string]*Gang
}

// UpdateAttempt implements Store.
func (s *MapStore) UpdateAttempt(key string, create bool, fn func(*Gang)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gangs[key]
	if g == nil {
		if !create {
			return false
		}
		if s.gangs == nil {
			s.gangs = map[string]*Gang{}
		}
		g = &Gang{}
		s.gangs[key] = g
	}
	fn(g)
	return true
}

// Gang is the ledger's record of one PodGang's attempts. Its zero value is a gang never
// attempted; a Store holds it and serialises access to it.
type Gang struct {
	// epoch numbers the gang's attempts; a member admitted under an older epoch belongs to an
	// attempt that was abandoned or already released.
	epoch uint64
	// attemptStart is when the current attempt assumed its first member.
	attemptStart time.Time
	// waiting are the members waiting at the Permit barrier.
	waiting map[types.UID]struct{}
	// deferred are members beyond their PodGroup's minReplicas, turned away until the quorum
	// is placed.
	deferred map[types.UID]struct{}
	// failed counts, per PodGroup, members that found no node in the current attempt.
	failed map[string]int32
	// failures counts consecutive failed attempts; backoffUntil ends the current back-off.
	failures     int
	backoffUntil time.Time
	// lastFailure is when the gang last failed an attempt: it queues behind gangs that did not.
	lastFailure time.Time
	// reason is why the gang is not placed ("" once it is); lastEvent when it was last told.
	reason string
	// cause is reason as data (one of the Wait* constants).
	cause     string
	lastEvent time.Time
	// unplaceableSince is when the gang was first found unplaceable since it was last placed.
	unplaceableSince time.Time
}

// New returns a ledger that keeps its gangs in a MapStore of its own.
func New(c clock.PassiveClock, p Policy) *Ledger { return NewWithStore(c, p, &MapStore{}) }

// NewWithStore returns a ledger whose gangs live in s.
func NewWithStore(c clock.PassiveClock, p Policy, s Store) *Ledger {
	return &Ledger{clock: c, policy: p, store: s}
}

// init makes a zero Gang a gang at its first attempt.
func (g *Gang) init() {
	if g.epoch == 0 {
		g.epoch = 1
	}
	if g.waiting == nil {
		g.waiting, g.deferred, g.failed = map[types.UID]struct{}{}, map[types.UID]struct{}{}, map[string]int32{}
	}
}

// update runs fn on the gang of key, made if missing.
func (l *Ledger) update(key string, fn func(g *Gang)) {
	l.store.UpdateAttempt(key, true, func(g *Gang) {
		g.init()
		fn(g)
	})
}

// view runs fn on the gang of key if it has a record.
func (l *Ledger) view(key string, fn func(g *Gang)) {
	l.store.UpdateAttempt(key, false, fn)
}

// Kind is what the ledger says about a member about to be attempted.
type Kind int

const (
	// Proceed: the member is part of the gang's quorum; place it and wait at the barrier.
	Proceed Kind = iota
	// Extra: the gang's quorum already has nodes; place the member without waiting.
	Extra
	// Defer: the member's PodGroup already has its quorum in this attempt; it is retried once
	// the whole gang is placed, so extras never take the room of missing members.
	Defer
	// BackOff: the gang failed an attempt moments ago and waits before the next.
	BackOff
)

// Verdict is the ledger's answer to Admit.
type Verdict struct {
	Kind Kind
	// Epoch is the attempt the member joins.
	Epoch uint64
	// FirstOfAttempt is set when no member of the gang has a node yet in this attempt: the
	// caller checks that the whole gang fits before placing this one.
	FirstOfAttempt bool
	// Message explains Defer and BackOff.
	Message string
	// Until is when a BackOff ends.
	Until time.Time
}

// Admit decides what to do with a member that is about to be attempted. q is the gang now.
func (l *Ledger) Admit(key string, uid types.UID, group string, q Quorum) (v Verdict) {
	l.update(key, func(g *Gang) { v = g.admit(l.clock.Now(), uid, group, q) })
	return v
}

func (g *Gang) admit(now time.Time, uid types.UID, group string, q Quorum) Verdict {
	if now.Before(g.backoffUntil) {
		return Verdict{Kind: BackOff, Until: g.backoffUntil, Message: fmt.Sprintf(
			"the gang is backing off for %s after a failed attempt: %s", g.backoffUntil.Sub(now).Round(time.Millisecond), g.reason)}
	}
	if q.Held() {
		return Verdict{Kind: Extra, Epoch: g.epoch}
	}
	if gs, ok := q.Group(group); ok && gs.Held() >= gs.Min {
		g.deferred[uid] = struct{}{}
		return Verdict{Kind: Defer, Epoch: g.epoch, Message: fmt.Sprintf(
			"PodGroup %q already has its %d required pods; this one is placed after the rest of the gang: %s", group, gs.Min, q.Progress())}
	}
	return Verdict{Kind: Proceed, Epoch: g.epoch, FirstOfAttempt: q.Assumed() == 0}
}

// Reserve records that a member admitted under epoch got a node. It fails when that attempt was
// abandoned in the meantime; first is set for the attempt's first member.
func (l *Ledger) Reserve(key string, epoch uint64) (first bool, err error) {
	l.update(key, func(g *Gang) {
		if epoch != g.epoch {
			err = fmt.Errorf("the gang's attempt was abandoned: %s", g.reason)
			return
		}
		if g.attemptStart.IsZero() {
			g.attemptStart = l.clock.Now()
			first = true
		}
	})
	return first, err
}

// PermitKind is what the barrier does with a member.
type PermitKind int

const (
	// Allow: the quorum has nodes; let this member and every waiting one bind.
	Allow PermitKind = iota
	// Wait at the barrier.
	Wait
	// Reject: the member's attempt was abandoned.
	Reject
)

// PermitVerdict is the barrier's answer.
type PermitVerdict struct {
	Kind PermitKind
	// Release are waiting members to allow; Activate are deferred members to retry now.
	Release, Activate []types.UID
	Message           string
}

// Permit is the gang barrier. q counts the member itself as assumed.
func (l *Ledger) Permit(key string, uid types.UID, epoch uint64, q Quorum) (v PermitVerdict) {
	l.update(key, func(g *Gang) { v = g.permit(uid, epoch, q) })
	return v
}

func (g *Gang) permit(uid types.UID, epoch uint64, q Quorum) PermitVerdict {
	if epoch != g.epoch {
		return PermitVerdict{Kind: Reject, Message: fmt.Sprintf("the gang's attempt was abandoned: %s", g.reason)}
	}
	if !q.Held() {
		g.waiting[uid] = struct{}{}
		return PermitVerdict{Kind: Wait}
	}
	v := PermitVerdict{Kind: Allow, Release: keys(g.waiting), Activate: keys(g.deferred)}
	// Members of a released attempt that lose their node later are retried on their own.
	g.epoch++
	g.waiting = map[types.UID]struct{}{}
	g.deferred = map[types.UID]struct{}{}
	g.failed = map[string]int32{}
	g.attemptStart = time.Time{}
	g.failures = 0
	g.reason, g.cause = "", ""
	g.lastEvent = time.Time{}
	g.unplaceableSince = time.Time{}
	return v
}

// Failure is an abandoned attempt: every waiting member is rejected at once so no capacity is
// hoarded, and the gang backs off.
type Failure struct {
	Reject  []types.UID
	Backoff time.Duration
	Reason  string
	// Cause is a short machine-readable kind of Reason (one of the Cause* constants), for
	// metrics.
	Cause string
}

// Kinds of a failed attempt.
const (
	// CausePermitTimeout: members waited at the Permit barrier longer than the gang's timeout.
	CausePermitTimeout = "permit_timeout"
	// CauseMemberLost: a member was rejected or its binding failed before the gang was complete.
	CauseMemberLost = "member_lost"
	// CauseNoNode: a member fits no node and the quorum can no longer be reached in this attempt.
	CauseNoNode = "no_node"
)

// Lost records that a member admitted under epoch lost its node (Permit timeout, rejection,
// failed binding). Before the barrier is released that abandons the attempt; after, the member
// is simply retried as an extra. timeout is the gang's Permit timeout, used to tell a timeout
// apart in the reason.
func (l *Ledger) Lost(key string, uid types.UID, epoch uint64, q Quorum, timeout time.Duration) (f *Failure) {
	l.update(key, func(g *Gang) {
		if epoch != g.epoch {
			return
		}
		delete(g.waiting, uid)
		reason, cause := fmt.Sprintf("a member lost its node before the gang was complete; %s", q.Progress()), CauseMemberLost
		if waited := l.clock.Since(g.attemptStart); !g.attemptStart.IsZero() && waited >= timeout {
			reason, cause = fmt.Sprintf("timed out after %s at the Permit barrier; %s", timeout, q.Progress()), CausePermitTimeout
		}
		f = l.fail(g, reason, cause)
	})
	return f
}

// NoNode records that a member admitted under epoch fits no node. When the gang can no longer
// reach its quorum in this attempt and members hold nodes, the attempt is abandoned; a gang that
// holds nothing simply stays pending (nothing is hoarded, no back-off needed).
func (l *Ledger) NoNode(key, group string, epoch uint64, q Quorum, why string) (f *Failure) {
	l.update(key, func(g *Gang) {
		if epoch != g.epoch {
			return
		}
		g.failed[group]++
		reachable := true
		for _, gs := range q {
			if gs.Present-g.failed[gs.Name] < gs.Min {
				reachable = false
			}
		}
		if reachable || q.Assumed() == 0 {
			return
		}
		f = l.fail(g, fmt.Sprintf("%s; %s", why, q.Progress()), CauseNoNode)
	})
	return f
}

func (l *Ledger) fail(g *Gang, reason, cause string) *Failure {
	now := l.clock.Now()
	g.failures++
	// Counting consecutive failures shows that the gang keeps being retried.
	reason = fmt.Sprintf("attempt %d failed: %s", g.failures, reason)
	f := &Failure{Reject: keys(g.waiting), Reason: reason, Cause: cause}
	g.epoch++
	g.waiting = map[types.UID]struct{}{}
	g.deferred = map[types.UID]struct{}{}
	g.failed = map[string]int32{}
	g.attemptStart = time.Time{}
	f.Backoff = l.policy.InitialBackoff << min(g.failures-1, 20)
	if f.Backoff > l.policy.MaxBackoff || f.Backoff <= 0 {
		f.Backoff = l.policy.MaxBackoff
	}
	g.backoffUntil = now.Add(f.Backoff)
	g.lastFailure = now
	g.reason = reason
	return f
}

// Why a gang is not placed, as data: what grove_scheduler_gangs_waiting{reason} counts, so that
// nothing reads the prose of a reason back.
const (
	// WaitNoRoom: the nodes it may use do not hold its quorum.
	WaitNoRoom = "no_room"
	// WaitNoDomain: no domain of a required pack key holds it.
	WaitNoDomain = "no_domain"
	// WaitSpread: every domain that holds it runs another replica of its spread group.
	WaitSpread = "spread"
	// WaitSlice: its pack domains hold it, but not each slice of a required slicing in a
	// domain of its own.
	WaitSlice = "slice"
	// WaitFilterRejected: counted capacity holds it, but a filter plugin (affinity, ports,
	// volumes...) rejects the nodes of every candidate domain.
	WaitFilterRejected = "filter_rejected"
	// WaitReservedForOther: the room it needs is reserved for a gang ahead of it.
	WaitReservedForOther = "reserved_for_other"
	// WaitDRA: its devices are not there.
	WaitDRA = "dra"
	// WaitBinding: an attempt got nodes but lost them (Permit timeout, a member rejected or
	// failing to bind).
	WaitBinding = "binding"
	// WaitReuseRequired: its earlier domain, which it must reuse, does not hold it now.
	WaitReuseRequired = "reuse_required"
	// WaitRoleAffinity: it would fit but for a required affinity or anti-affinity group of
	// its roles.
	WaitRoleAffinity = "role_affinity"
)

// Unplaceable records why the gang cannot be placed now (reason for people, cause, a Wait*
// constant, for metrics) and reports whether to tell the user: once when the gang becomes
// unplaceable, then at most every EventInterval.
func (l *Ledger) Unplaceable(key, reason, cause string) (tell bool) {
	l.update(key, func(g *Gang) {
		g.reason, g.cause = reason, cause
		now := l.clock.Now()
		if g.unplaceableSince.IsZero() {
			g.unplaceableSince = now
		}
		if g.lastEvent.IsZero() || now.Sub(g.lastEvent) >= l.policy.EventInterval {
			g.lastEvent = now
			tell = true
		}
	})
	return tell
}

// BackingOff returns when the gang's back-off ends and why it backs off; ok is false when it
// does not.
func (l *Ledger) BackingOff(key string) (until time.Time, reason string, ok bool) {
	l.view(key, func(g *Gang) {
		if l.clock.Now().Before(g.backoffUntil) {
			until, reason, ok = g.backoffUntil, g.reason, true
		}
	})
	return until, reason, ok
}

// Reason is why the gang is not placed, "" when nothing failed since it was last placed.
func (l *Ledger) Reason(key string) (reason string) {
	l.view(key, func(g *Gang) { reason = g.reason })
	return reason
}

// Cause is Reason as data (a Wait* constant), "" when nothing failed since it was last placed.
func (l *Ledger) Cause(key string) (cause string) {
	l.view(key, func(g *Gang) { cause = g.cause })
	return cause
}

// UnplaceableSince is when the gang was first found unplaceable since it was last placed (zero
// if it was not).
func (l *Ledger) UnplaceableSince(key string) (since time.Time) {
	l.view(key, func(g *Gang) { since = g.unplaceableSince })
	return since
}

// LastFailure is when the gang last abandoned an attempt (zero if never). Queue order uses it so
// that a failing gang goes behind the others.
func (l *Ledger) LastFailure(key string) (at time.Time) {
	l.view(key, func(g *Gang) { at = g.lastFailure })
	return at
}

// Forget returns a deleted gang's waiting members, to be rejected, and starts its record afresh.
func (l *Ledger) Forget(key string) (waiting []types.UID) {
	l.view(key, func(g *Gang) {
		waiting = g.Waiting()
		*g = Gang{}
	})
	return waiting
}

// Waiting lists the members waiting at the Permit barrier.
func (g *Gang) Waiting() []types.UID { return keys(g.waiting) }

func keys(m map[types.UID]struct{}) []types.UID {
	out := make([]types.UID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
