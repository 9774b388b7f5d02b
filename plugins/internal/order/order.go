// Package order is grove-scheduler's one order over claims on room: which gang (or which
// gang's elastic members) gets free room first. Every rule by which a gang waits for another —
// a gang lets a quorum ahead of it go first, scale-out waits for base quorums, elastic members
// wait for quorums, a reservation lets gangs ahead of its holder use its nodes — asks Before,
// and waits only for entries strictly ahead of its own. A strict total order has no cycles, so
// no two gangs can wait on each other.
//
// The order, most urgent first:
//
//  1. higher priority — a gang's priority is the lowest of its quorum's members (a gang is only
//     as urgent as the pods it cannot do without; one high-priority pod does not lift three
//     low-priority ones, and preemption uses the same number);
//  2. tier: base quorums, then scale-out quorums, then elastic members — every workload's
//     minimum before any workload's extra capacity. The tier applies across PodCliqueSets: a
//     rule "base before scale-out only within one PodCliqueSet" mixed with age is not
//     transitive (an old scale-out of A, a middle-aged base of B, a young base of A go round
//     in a circle);
//  3. older PodGang first (creation time), then — among PodGangs of one second, the
//     apiserver's resolution — the one whose first pod reached the scheduling queue first (as
//     the queue pops them: "gang-10" is not ahead of "gang-9" for its name);
//  4. namespace/name, so that no two entries are equal.
//
// The scheduling queue's own sort (which pod is popped next) is a different question, with a
// fairness bump for gangs that just failed; it never decides who waits for whom.
package order

import (
	"cmp"
	"time"
)

// Tier is what an entry claims room for.
type Tier uint8

const (
	// Base is the quorum of a base PodGang (a PodCliqueSet replica's, or any PodGang outside a
	// scaling group).
	Base Tier = iota
	// ScaleOut is the quorum of a scaled PodGang: a scaling-group replica beyond minAvailable.
	ScaleOut
	// Elastic is members beyond their PodGroup's minReplicas, of a gang whose quorum has nodes.
	Elastic
)

func (t Tier) String() string {
	switch t {
	case Base:
		return "base quorum"
	case ScaleOut:
		return "scale-out quorum"
	default:
		return "elastic members"
	}
}

// Entry is one claim on room.
type Entry struct {
	// Key is the PodGang's "namespace/name".
	Key      string
	Priority int32
	Tier     Tier
	// Created is the PodGang's creation time.
	Created time.Time
	// Arrival is when its first pod reached the scheduling queue; zero (not yet) sorts last.
	Arrival time.Time
}

// Compare is the order: negative when a goes before b, positive when after, 0 only for equal
// entries.
func Compare(a, b Entry) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if a.Tier != b.Tier {
		return cmp.Compare(a.Tier, b.Tier)
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	if c := compareArrival(a.Arrival, b.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// compareArrival orders arrival times with zero (not arrived) last.
func compareArrival(a, b time.Time) int {
	switch {
	case a.IsZero() && b.IsZero():
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// Before reports whether a is strictly ahead of b: the only case in which b may wait for a.
func Before(a, b Entry) bool { return Compare(a, b) < 0 }

// QuorumPriority is a gang's priority: the lowest priority among its PodGroups that have a
// quorum to reach (minReplicas > 0), from what their members ask. fallback is used when no
// such PodGroup's priority is known.
func QuorumPriority(groups []GroupPriority, fallback int32) int32 {
	prio, known := fallback, false
	for _, g := range groups {
		if g.Min <= 0 || !g.Known {
			continue
		}
		if !known || g.Priority < prio {
			prio, known = g.Priority, true
		}
	}
	return prio
}

// GroupPriority is one PodGroup's say in its gang's priority.
type GroupPriority struct {
	Min      int32
	Priority int32
	// Known: a member of the PodGroup was seen.
	Known bool
}
