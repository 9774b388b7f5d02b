// Package ledger is grove-scheduler's gang ledger: per PodGang, whether its quorum is present,
// which attempt to place it is under way, which members wait at the Permit barrier, and how long
// a gang that failed an attempt backs off. It decides; grove-scheduler's gang plugin carries the
// decisions out through the scheduling framework. A gang's attempt state (Gang) is a value kept
// in the gang's one record in the gang cache (a Store), not in a map of the ledger's own.
package ledger

import (
	"fmt"
	"strings"
)

// GroupState is one PodGroup of a gang as the scheduler sees it now.
type GroupState struct {
	Name string
	// Min is the PodGroup's minReplicas.
	Min int32
	// Present counts members that exist, are not terminating and carry no scheduling gate.
	Present int32
	// Assumed counts members this scheduler reserved a node for: waiting at the barrier or binding.
	Assumed int32
	// Bound counts members bound to a node.
	Bound int32
}

// Held is how many members have a node, assumed or bound.
func (g GroupState) Held() int32 { return g.Assumed + g.Bound }

// Quorum is a gang's PodGroups in spec order.
type Quorum []GroupState

// Group returns the named PodGroup.
func (q Quorum) Group(name string) (GroupState, bool) {
	for _, g := range q {
		if g.Name == name {
			return g, true
		}
	}
	return GroupState{}, false
}

// Missing says which PodGroups lack members to attempt the gang ("" when none does).
func (q Quorum) Missing() string {
	var parts []string
	for _, g := range q {
		if g.Present < g.Min {
			parts = append(parts, fmt.Sprintf("PodGroup %q has %d of %d", g.Name, g.Present, g.Min))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "waiting for the gang's members to exist and be ungated: " + strings.Join(parts, ", ")
}

// Held reports whether every PodGroup has minReplicas members with a node.
func (q Quorum) Held() bool {
	for _, g := range q {
		if g.Held() < g.Min {
			return false
		}
	}
	return true
}

// Bound reports whether every PodGroup has minReplicas members bound.
func (q Quorum) Bound() bool {
	for _, g := range q {
		if g.Bound < g.Min {
			return false
		}
	}
	return true
}

// Assumed is the number of members assumed (not yet bound).
func (q Quorum) Assumed() int32 {
	var n int32
	for _, g := range q {
		n += g.Assumed
	}
	return n
}

// Names lists the PodGroups in the PodGang's order.
func (q Quorum) Names() []string {
	out := make([]string, len(q))
	for i, g := range q {
		out[i] = g.Name
	}
	return out
}

// Remaining is, per PodGroup, how many more members need a node to reach the quorum.
func (q Quorum) Remaining() map[string]int32 {
	out := make(map[string]int32, len(q))
	for _, g := range q {
		out[g.Name] = max(0, g.Min-g.Held())
	}
	return out
}

// Progress describes how far the gang got, e.g. `5 of 8 required pods have a node (PodGroup
// "decode" 1 of 4)`.
func (q Quorum) Progress() string {
	var held, required int32
	var short []string
	for _, g := range q {
		held += min(g.Held(), g.Min)
		required += g.Min
		if g.Held() < g.Min {
			short = append(short, fmt.Sprintf("PodGroup %q %d of %d", g.Name, g.Held(), g.Min))
		}
	}
	s := fmt.Sprintf("%d of %d required pods had a node", held, required)
	if len(short) > 0 {
		s += " (" + strings.Join(short, ", ") + ")"
	}
	return s
}
