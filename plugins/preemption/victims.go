package preemption

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Unit is what preemption evicts at once: every pod of one PodGang, or one pod outside gangs.
// A gang is never split: freeing part of it would leave it below its quorum.
type Unit struct {
	// Key names the unit in messages ("PodGang ns/name" or "pod ns/name").
	Key string
	// Gang is the PodGang's key ("ns/name"); "" for a pod outside gangs.
	Gang string
	// Priority is the highest priority among the unit's pods.
	Priority int32
	// ViolatesPDB: evicting the unit would break a PodDisruptionBudget.
	ViolatesPDB bool
	// Start is when the unit's newest pod started: of equally important units, the one that ran
	// least loses least work.
	Start time.Time
	// Pods are the unit's pods that hold room on a node.
	Pods []VictimPod
}

// VictimPod is what one pod of a unit frees on its node.
type VictimPod struct {
	Node  string
	Shape capacity.Resources
}

// Problem is one preemption question: which units, evicted whole, let the preemptor's
// remaining quorum fit?
type Problem struct {
	// Nodes are the nodes as the preemptor sees them: Free is what is left now; Excluded the
	// preemptor's PodGroups (classes) that may not run there.
	Nodes []placement.Node
	// Demand is what the preemptor still needs placed (its quorum, or one pod).
	Demand capacity.Demands
	// Tree, when constrained, holds the preemptor's pack constraints: freed room counts only if
	// the required domains hold the whole demand.
	Tree *placement.Tree
	// Held lists the preemptor's members already placed, per PodGroup, and the nodes of
	// devices already allocated to claims its members use: they pin its domains.
	Held map[string][]string
	// Slices are the preemptor's slicings (placement.Slicing), by PodGroup.
	Slices map[string]placement.Slicing
	// Spread are the preemptor's required replica spreads scoped to some of its PodGroups
	// (placement.BlockRequiredSpread): room freed counts for those PodGroups only outside the
	// domains the other replicas use.
	Spread []placement.Spread
	// Shared lists the nodes of the other PodGangs of its shared group
	// (spec.sharedTopologyConstraint), SharedBy names one: they pin the domain the group
	// shares, so room freed elsewhere does not count.
	Shared   []string
	SharedBy string
	// DomainKey is the label of the preemptor's gang-wide required domain: victims are then
	// chosen inside one domain value at a time, so that nothing is evicted elsewhere. PerNode
	// does the same per node (a single pod). Neither: victims may come from every node.
	DomainKey string
	PerNode   bool
	// Units are the eligible victims: lower priority than the preemptor, evictable now.
	Units []Unit
}

// Choice is the victims Select picked.
type Choice struct {
	// Victims are positions in Problem.Units, least important first.
	Victims []int
	// Domain is the domain value (or node) the preemptor is expected to use; "" when victims
	// may come from anywhere.
	Domain string
}

// Outcome says why Select found no victims.
type Outcome int

const (
	// Found: Choice holds the victims.
	Found Outcome = iota
	// FitsAlready: the preemptor fits without evicting anything; preemption is not what it lacks.
	FitsAlready
	// NotEnough: evicting every eligible unit would still not make it fit.
	NotEnough
)

// Select picks the victims: the units whose eviction makes the whole demand fit, evicting only
// lower-priority units, preferring units that break no PodDisruptionBudget, then the lowest
// priorities, then the fewest units. With a domain key it compares the domains (or nodes) and
// evicts inside the one whose victims are cheapest.
func Select(p Problem) (Choice, Outcome) {
	s := selector{p: p, domainByNode: make(map[string]string, len(p.Nodes))}
	for i := range p.Nodes {
		s.domainByNode[p.Nodes[i].Name] = s.domainOf(&p.Nodes[i])
	}
	if s.fits(nil) {
		return Choice{}, FitsAlready
	}
	// Three eviction orders, all lowest priority first: the last started first (least work
	// lost), the biggest first (fewest units) and the smallest first (fewest pods). Each yields
	// a victim set; the cheapest wins.
	bySize := func(sign int) []int {
		order := make([]int, len(p.Units))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			ua, ub := &p.Units[a], &p.Units[b]
			if c := cmp.Compare(ua.Priority, ub.Priority); c != 0 || ua.ViolatesPDB != ub.ViolatesPDB || sign == 0 {
				return lessImportant(ua, ub)
			}
			return cmp.Or(sign*cmp.Compare(len(ua.Pods), len(ub.Pods)), lessImportant(ua, ub))
		})
		return order
	}
	orders := [][]int{bySize(0), bySize(-1), bySize(+1)}

	var best *Choice
	var bestCost cost
	consider := func(domain string, in func(u int) bool) {
		for _, order := range orders {
			var candidates []int
			for _, u := range order {
				if in(u) {
					candidates = append(candidates, u)
				}
			}
			if len(candidates) == 0 {
				continue
			}
			victims, ok := s.pick(candidates)
			if !ok {
				continue
			}
			if c := s.cost(victims); best == nil || c.less(bestCost) {
				best, bestCost = &Choice{Victims: victims, Domain: domain}, c
			}
		}
	}
	if p.DomainKey == "" && !p.PerNode {
		consider("", func(int) bool { return true })
	} else {
		for _, domain := range s.domains() {
			consider(domain, func(u int) bool { return s.touches(u, domain) })
		}
	}
	if best == nil {
		return Choice{}, NotEnough
	}
	return *best, Found
}

// lessImportant orders units for eviction: PDB-safe before PDB-breaking, lower priority first,
// then the one that started last.
func lessImportant(a, b *Unit) int {
	if a.ViolatesPDB != b.ViolatesPDB {
		if !a.ViolatesPDB {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.Priority, b.Priority), b.Start.Compare(a.Start), cmp.Compare(a.Key, b.Key))
}

type selector struct {
	p Problem
	// domainByNode is each node's domain.
	domainByNode map[string]string
}

// pick returns the victims among candidates (least important first): the shortest prefix that
// makes the demand fit, then every victim whose reprieve still leaves it fitting is spared,
// most important first. ok is false when all candidates together do not make it fit.
func (s *selector) pick(candidates []int) ([]int, bool) {
	if !s.fits(candidates) {
		return nil, false
	}
	// Fit is monotone in the room freed, so the shortest fitting prefix is found by bisection.
	k := sort.Search(len(candidates), func(n int) bool { return s.fits(candidates[:n+1]) }) + 1
	victims := slices.Clone(candidates[:k])
	for i := len(victims) - 1; i >= 0; i-- {
		without := slices.Delete(slices.Clone(victims), i, i+1)
		if s.fits(without) {
			victims = without
		}
	}
	return victims, true
}

// fits reports whether the demand fits once the given units are evicted.
func (s *selector) fits(victims []int) bool {
	byName := make(map[string]int, len(s.p.Nodes))
	nodes := make([]placement.Node, len(s.p.Nodes))
	for i, n := range s.p.Nodes {
		byName[n.Name] = i
		nodes[i] = n
		nodes[i].Free = n.Free.Clone()
	}
	for _, u := range victims {
		for _, vp := range s.p.Units[u].Pods {
			if i, ok := byName[vp.Node]; ok {
				// Taking a negative count gives the pod's room back.
				nodes[i].Free.Take(vp.Shape, -1)
			}
		}
	}
	if s.p.Tree != nil && (s.p.Tree.Constrained() || len(s.p.Slices) > 0 || len(s.p.Spread) > 0) {
		demand := make(map[string]capacity.Demand, len(s.p.Demand))
		for _, d := range s.p.Demand {
			demand[d.Group] = d
		}
		_, unfit := placement.Choose(placement.Input{Tree: s.p.Tree, Nodes: nodes, Demand: demand, Held: s.p.Held, Shared: s.p.Shared, SharedBy: s.p.SharedBy,
			Slices: s.p.Slices, Spread: s.p.Spread})
		return unfit == nil
	}
	free := make([]capacity.Resources, len(nodes))
	masks := make([]capacity.Mask, len(nodes))
	for i := range nodes {
		free[i], masks[i] = nodes[i].Free, ^nodes[i].Excluded
	}
	var placed int64
	for _, n := range capacity.Place(free, masks, s.p.Demand) {
		placed += n
	}
	return placed == s.p.Demand.Total()
}

// domainOf is the domain of a node ("" when it is in none).
func (s *selector) domainOf(n *placement.Node) string {
	if s.p.PerNode {
		return n.Name
	}
	return n.Labels[s.p.DomainKey]
}

func (s *selector) domains() []string {
	seen := map[string]bool{}
	var out []string
	for i := range s.p.Nodes {
		if d := s.domainOf(&s.p.Nodes[i]); d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// touches reports whether unit u frees room in domain.
func (s *selector) touches(u int, domain string) bool {
	for _, vp := range s.p.Units[u].Pods {
		if d, ok := s.domainByNode[vp.Node]; ok && d == domain {
			return true
		}
	}
	return false
}

// cost ranks victim sets as kube-scheduler ranks preemption candidates: fewest PDB
// violations, then the lowest highest priority, the lowest sum of priorities, then the fewest
// units and pods.
type cost struct {
	violations, units, pods int
	highest                 int32
	sum                     int64
}

func (s *selector) cost(victims []int) cost {
	var c cost
	for i, u := range victims {
		unit := &s.p.Units[u]
		if unit.ViolatesPDB {
			c.violations++
		}
		if i == 0 || unit.Priority > c.highest {
			c.highest = unit.Priority
		}
		c.sum += int64(unit.Priority)
		c.units++
		c.pods += len(unit.Pods)
	}
	return c
}

func (c cost) less(o cost) bool {
	return cmp.Or(cmp.Compare(c.violations, o.violations), cmp.Compare(c.highest, o.highest),
		cmp.Compare(c.sum, o.sum), cmp.Compare(c.units, o.units), cmp.Compare(c.pods, o.pods)) < 0
}
