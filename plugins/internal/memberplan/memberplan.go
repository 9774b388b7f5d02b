// Package memberplan is the placement of a gang attempt's members, computed once, at the first
// member of a PodGroup, and handed to the later members: each then costs the scheduler one
// Filter call on its planned node and no Score (the framework skips Score when a single node
// is feasible).
//
// It is the idea of Kubernetes 1.37's pod-group scheduling cycle (a group's pods are placed
// one after the other against a snapshot that already holds the ones before them) and of
// opportunistic batching (pods the scheduler cannot tell apart reuse one ranking of the
// nodes), applied to a gang whose members arrive in separate cycles: the first member's cycle
// ranks the candidate nodes once, and the members alike to it are assigned to them in that
// order, each checked by the profile's Filter plugins on a copy of its node that already holds
// the members planned before it.
//
// The package is plain data: Assign takes the ranked nodes and a Simulator (the scheduler's
// filters, or a test's rules) and returns who goes where; Store keeps one plan per gang
// attempt.
package memberplan

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// Node is a candidate node, ranked: Assign walks them in the order given, best first.
type Node struct {
	Name string
	// Free is what the node has left before any planned member (capacity.NodeFree).
	Free capacity.Resources
}

// Simulator answers for the scheduler's filters. Member and node are indexes into Assign's
// members and nodes.
type Simulator interface {
	// Fits reports whether the member passes the filters on the node as it would be with the
	// members placed there so far.
	Fits(member, node int) bool
	// Place records the member on the node, for the members checked after it.
	Place(member, node int)
}

// Assign plans members (all of one shape, alike to the filters) onto nodes. Like the
// scheduler handing batched pods the next node of one ranking, it gives each member the next
// node in rank order that still has room, one member per node a round, and starts another
// round over the nodes with room left once every node took one — so the plan spreads as the
// profile's scores would, without scoring again. A node the filters refuse a member is not
// offered to the same member again. Members that fit nowhere are left out: they are placed by
// the ordinary path.
func Assign(members []types.UID, shape capacity.Resources, nodes []Node, sim Simulator) map[types.UID]string {
	out := make(map[types.UID]string, len(members))
	if len(members) == 0 || len(nodes) == 0 {
		return out
	}
	free := make([]capacity.Resources, len(nodes))
	for i := range nodes {
		free[i] = nodes[i].Free.Clone()
	}
	// refused[node] is set once the filters turned a member away from the node: members are
	// alike, so they would turn the next one away too.
	refused := make([]bool, len(nodes))
	m := 0
	for m < len(members) {
		placed := false
		for n := range nodes {
			if m == len(members) {
				break
			}
			if refused[n] || free[n].FitCount(shape) < 1 {
				continue
			}
			if !sim.Fits(m, n) {
				refused[n] = true
				continue
			}
			sim.Place(m, n)
			free[n].Take(shape, 1)
			out[members[m]] = nodes[n].Name
			m++
			placed = true
		}
		if !placed {
			break
		}
	}
	return out
}

// Plan is a gang attempt's planned node per member.
type Plan struct {
	// Epoch is the gang attempt (ledger.Verdict.Epoch) the plan was made for.
	Epoch uint64
	nodes map[types.UID]planned
	// signatures are the scheduling signatures of the attempt's members computed so far: a
	// member whose Reserve finds the others unlike it must not sign them all again at the next
	// member's (signing is most of the cost of planning).
	signatures map[types.UID][]byte
}

// empty reports whether the plan holds nothing worth keeping.
func (p *Plan) empty() bool { return len(p.nodes) == 0 && len(p.signatures) == 0 }

type planned struct{ node, group string }

// Store keeps the current plan of every gang attempt. Its methods are safe for concurrent use.
type Store struct {
	mu    sync.Mutex
	plans map[string]*Plan
}

// Add records planned nodes for the members of PodGroup group in gang key's attempt epoch. A
// plan of an older attempt is replaced; one of the same attempt (another PodGroup's members)
// is added to.
func (s *Store) Add(key string, epoch uint64, group string, nodes map[types.UID]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plans == nil {
		s.plans = map[string]*Plan{}
	}
	p := s.attempt(key, epoch)
	for uid, node := range nodes {
		p.nodes[uid] = planned{node: node, group: group}
	}
	if p.empty() {
		delete(s.plans, key)
	}
}

// attempt returns gang key's plan for attempt epoch, replacing one of an older attempt. The
// caller holds s.mu.
func (s *Store) attempt(key string, epoch uint64) *Plan {
	if s.plans == nil {
		s.plans = map[string]*Plan{}
	}
	p := s.plans[key]
	if p == nil || p.Epoch != epoch {
		p = &Plan{Epoch: epoch, nodes: map[types.UID]planned{}}
		s.plans[key] = p
	}
	return p
}

// Signature returns member uid's scheduling signature as sign computes it, computed once per
// gang attempt: later calls in the same attempt return the remembered one.
func (s *Store) Signature(key string, epoch uint64, uid types.UID, sign func() []byte) []byte {
	s.mu.Lock()
	if p := s.plans[key]; p != nil && p.Epoch == epoch {
		if sig, ok := p.signatures[uid]; ok {
			s.mu.Unlock()
			return sig
		}
	}
	s.mu.Unlock()
	sig := sign()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.attempt(key, epoch)
	if p.signatures == nil {
		p.signatures = map[types.UID][]byte{}
	}
	p.signatures[uid] = sig
	return sig
}

// Node returns member uid's planned node in gang key's attempt epoch. A member is handed its
// node once: asking again (a retry) finds none.
func (s *Store) Node(key string, epoch uint64, uid types.UID) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.plans[key]
	if p == nil || p.Epoch != epoch {
		return "", false
	}
	pl, ok := p.nodes[uid]
	delete(p.nodes, uid)
	if p.empty() {
		delete(s.plans, key)
	}
	return pl.node, ok
}

// Planned reports whether PodGroup group of gang key's attempt epoch has planned nodes left.
func (s *Store) Planned(key string, epoch uint64, group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.plans[key]
	if p == nil || p.Epoch != epoch {
		return false
	}
	for _, pl := range p.nodes {
		if pl.group == group {
			return true
		}
	}
	return false
}

// Forget drops gang key's plan (its attempt ended, or the PodGang is gone).
func (s *Store) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.plans, key)
}

// Len is the number of gangs with a plan.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.plans)
}
