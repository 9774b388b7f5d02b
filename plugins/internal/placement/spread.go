package placement

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// Spread is one replica spread of a gang (PodGang spec.replicaSpreadConstraints): the gang's
// replica should not share a value of Key with the other replicas of its spread group.
type Spread struct {
	Key string
	// Required: a domain another replica uses is not for this gang. Otherwise the gang goes to
	// the domains fewest replicas use, keeping within MaxSkew while it can.
	Required bool
	MaxSkew  int32
	// PodGroups, when set, are the PodGroups of the gang the spread applies to (a scaling-group
	// replica inside a base PodGang); empty means the whole gang.
	PodGroups []string
	// Others are the other replicas of the group that hold nodes.
	Others []SpreadMember
}

// scope is a spread applied to some PodGroups only: the nodes it takes out for the set of the
// gang's tree that holds exactly those PodGroups (and everything nested in it).
type scope struct {
	groups  []string
	blocked []bool
}

// SpreadMember is another replica of a spread group: the nodes its PodGangs' members hold
// (bound or assumed) and one of those PodGangs, named in messages.
type SpreadMember struct {
	Gang  string
	Nodes []string
}

// spreadUse is how many other replicas use each domain of a spread's key (positions in
// d.values), and one of their PodGangs per domain.
type spreadUse struct {
	d     *domains
	count []int
	by    []string
}

// use counts, per domain of the spread's key among x's nodes, the other replicas that use it.
// Nodes x does not know are in no domain.
func (s *Spread) use(x *Index) spreadUse {
	d := x.domainsOf(s.Key)
	u := spreadUse{d: d, count: make([]int, len(d.values)), by: make([]string, len(d.values))}
	// seen[v] is one more than the last replica counted in domain v: each counts once there.
	seen := make([]int, len(d.values))
	for k, m := range s.Others {
		for _, n := range m.Nodes {
			i, ok := x.byName[n]
			if !ok {
				continue
			}
			v := d.of[i]
			if v < 0 || seen[v] == k+1 {
				continue
			}
			seen[v] = k + 1
			u.count[v]++
			if u.by[v] == "" || m.Gang < u.by[v] {
				u.by[v] = m.Gang
			}
		}
	}
	return u
}

// chooseSpread is Choose under replica spreads. A required spread takes every node of a domain
// another replica uses (and every node without the key) out of the question. Preferred spreads
// are tried in tiers: first only domains where the gang keeps the skew within MaxSkew (at most
// min+MaxSkew-1 replicas there already), then one more replica per tier, until the gang fits or
// every domain is allowed. The plan remembers the nodes the tier that fitted allowed, so that
// members stay in them.
func chooseSpread(in Input) (*Plan, *Unfit) {
	spreads := in.Spread
	in.Spread = nil
	if in.Index == nil {
		// Built once for every tier's choice.
		in.Index = NewIndex(in.Nodes)
	}
	n := len(in.Nodes)
	blocked := make([]bool, n)
	// Scoped spreads block nodes for their PodGroups only, one block per distinct scope.
	scopeOf := map[string]int{}
	var scopes []scope
	scopeFor := func(s *Spread) int {
		if len(s.PodGroups) == 0 {
			return -1
		}
		k := strings.Join(sets.List(sets.New(s.PodGroups...)), "\x00")
		if i, ok := scopeOf[k]; ok {
			return i
		}
		scopes = append(scopes, scope{groups: s.PodGroups, blocked: make([]bool, n)})
		scopeOf[k] = len(scopes) - 1
		return len(scopes) - 1
	}
	var required []requiredUse
	gangRequired := false
	type preferredUse struct {
		s     *Spread
		use   spreadUse
		min   int
		max   int
		scope int
	}
	var preferred []preferredUse
	for i := range spreads {
		s := &spreads[i]
		use := s.use(in.Index)
		sc := scopeFor(s)
		if s.Required {
			required = append(required, requiredUse{s: s, use: use})
			if sc >= 0 {
				markBlocked(use, scopes[sc].blocked)
			} else {
				markBlocked(use, blocked)
				gangRequired = true
			}
			continue
		}
		// The least and most used domains: every domain has a node, so these are the counts
		// of the nodes' domains.
		u := preferredUse{s: s, use: use, min: -1, scope: sc}
		for _, c := range use.count {
			if u.min < 0 || c < u.min {
				u.min = c
			}
			u.max = max(u.max, c)
		}
		preferred = append(preferred, u)
	}
	var lastUnfit *Unfit
	for tier := 0; ; tier++ {
		// out: the nodes this tier takes out (with the required spreads' blocks).
		out, restricted, all := append([]bool(nil), blocked...), false, true
		// The scopes' blocks for this tier: required ones plus the preferred tier's.
		tierScopes := make([]scope, len(scopes))
		scopeOut := make([][]bool, len(scopes))
		for k := range scopes {
			tierScopes[k] = scope{groups: scopes[k].groups, blocked: append([]bool(nil), scopes[k].blocked...)}
			scopeOut[k] = make([]bool, n)
		}
		// tierOut: the nodes the preferred tier takes out, for SpreadNodes.
		tierOut := make([]bool, n)
		for _, u := range preferred {
			limit := u.min + int(max(u.s.MaxSkew, 1)) - 1 + tier
			if limit < u.max && n > 0 {
				all = false
			}
			for i, v := range u.use.d.of {
				if v < 0 || u.use.count[v] <= limit {
					continue
				}
				if u.scope >= 0 {
					tierScopes[u.scope].blocked[i], scopeOut[u.scope][i] = true, true
				} else {
					out[i], tierOut[i], restricted = true, true, true
				}
			}
		}
		trial := in
		trial.closed = out
		trial.scopes = tierScopes
		plan, unfit := Choose(trial)
		if unfit == nil {
			plan.recordScopes(in.Index, scopes, scopeOut)
			if gangRequired {
				plan.spreadRequired = namesWithout(in.Index, blocked)
			}
			if restricted {
				plan.spreadNodes = &nodeMarks{x: in.Index, out: tierOut}
			}
			return plan, nil
		}
		lastUnfit = unfit
		if all || len(preferred) == 0 {
			break
		}
	}
	if len(required) > 0 {
		// Would the gang fit were it not for the other replicas? Then the spread is why it waits.
		if _, unfit := Choose(in); unfit == nil && lastUnfit != nil {
			return nil, spreadUnfit(required, lastUnfit)
		}
	}
	return nil, lastUnfit
}

// namesWithout are the names of x's nodes but those marked in out.
func namesWithout(x *Index, out []bool) sets.Set[string] {
	size := 0
	for _, o := range out {
		if !o {
			size++
		}
	}
	// Sized up front: growing a set of thousands of names rehashes it several times.
	names := make(sets.Set[string], size)
	for i, name := range x.names {
		if !out[i] {
			names.Insert(name)
		}
	}
	return names
}

type requiredUse struct {
	s   *Spread
	use spreadUse
}

// spreadUnfit says that the gang waits for a domain of its own.
func spreadUnfit(required []requiredUse, inner *Unfit) *Unfit {
	u := &Unfit{Set: inner.Set, Demand: inner.Demand}
	if inner.Set == nil {
		u.Set = &Set{What: "the PodGang"}
	}
	var parts []string
	for _, r := range required {
		// The domains in use, in sorted order (as d.values is).
		var inUse []int
		for v, c := range r.use.count {
			if c > 0 {
				inUse = append(inUse, v)
			}
		}
		var used []string
		for i, v := range inUse {
			if i == 5 {
				used = append(used, fmt.Sprintf("and %d more", len(inUse)-i))
				break
			}
			used = append(used, fmt.Sprintf("%q (PodGang %s)", r.use.d.values[v], r.use.by[v]))
		}
		noun, of := DomainNoun(r.s.Key), "its PodCliqueSet"
		if len(r.s.PodGroups) > 0 {
			of = fmt.Sprintf("its scaling group (PodGroups %s)", strings.Join(r.s.PodGroups, ", "))
		}
		parts = append(parts, fmt.Sprintf("no %s (%s) that holds it is free of the other replicas of %s; in use: %s",
			noun, r.s.Key, of, strings.Join(used, ", ")))
	}
	u.Key, u.spreadWhy = required[0].s.Key, strings.Join(parts, "; ")
	return u
}

// SpreadNodes are the nodes the gang's replica spreads steer it to: the least used domains
// that held it (preferred spreads), outside the domains other replicas use (required ones);
// nil when no preferred spread restricted anything.
func (p *Plan) SpreadNodes() sets.Set[string] { return p.spreadNodes.names() }

// SpreadRequiredNodes are the nodes outside every domain another replica uses, under the
// gang's required spreads; nil without a required spread.
func (p *Plan) SpreadRequiredNodes() sets.Set[string] { return p.spreadRequired }

// SpreadRequiredNodesFor is SpreadRequiredNodes for one PodGroup: the gang-wide nodes further
// narrowed by the required spreads scoped to the PodGroup; nil when neither applies.
func (p *Plan) SpreadRequiredNodesFor(group string) sets.Set[string] {
	return intersectNil(p.spreadRequired, p.scopedRequired[group])
}

// SpreadNodesFor is SpreadNodes for one PodGroup, with the preferred spreads scoped to it.
func (p *Plan) SpreadNodesFor(group string) sets.Set[string] {
	return intersectNil(p.spreadNodes.names(), p.scopedPreferred[group])
}

// SpreadNodesWithin is SpreadNodesFor(group) narrowed to within (nil: every node); nil when no
// preferred spread restricts the PodGroup. Given the few nodes of a required domain, it asks
// the spreads about those alone rather than naming every node they allow.
func (p *Plan) SpreadNodesWithin(group string, within sets.Set[string]) sets.Set[string] {
	scoped := p.scopedPreferred[group]
	switch {
	case p.spreadNodes == nil && scoped == nil:
		return nil
	case within == nil:
		return p.SpreadNodesFor(group)
	}
	out := sets.New[string]()
	for name := range within {
		if (p.spreadNodes == nil || p.spreadNodes.has(name)) && (scoped == nil || scoped.Has(name)) {
			out.Insert(name)
		}
	}
	return out
}

// nodeMarks is a set of nodes kept as marks over an index (every node but those out), named
// only when a caller asks for the whole set: on thousands of nodes, naming them for every gang
// cost more than the rest of its spread.
type nodeMarks struct {
	x   *Index
	out []bool

	once sync.Once
	set  sets.Set[string]
}

func (m *nodeMarks) names() sets.Set[string] {
	if m == nil {
		return nil
	}
	m.once.Do(func() { m.set = namesWithout(m.x, m.out) })
	return m.set
}

func (m *nodeMarks) has(name string) bool {
	i, ok := m.x.byName[name]
	return ok && !m.out[i]
}

func intersectNil(a, b sets.Set[string]) sets.Set[string] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return a.Intersection(b)
}

// recordScopes remembers, per PodGroup of a scope, the nodes its required blocks leave it and,
// when the preferred tier restricted it, the nodes that tier allowed.
func (p *Plan) recordScopes(x *Index, scopes []scope, out [][]bool) {
	for k, sc := range scopes {
		req := namesWithout(x, sc.blocked)
		var pref sets.Set[string]
		if slices.Contains(out[k], true) {
			pref = namesWithout(x, out[k])
		}
		for _, g := range sc.groups {
			if p.scopedRequired == nil {
				p.scopedRequired, p.scopedPreferred = map[string]sets.Set[string]{}, map[string]sets.Set[string]{}
			}
			p.scopedRequired[g] = intersectNil(p.scopedRequired[g], req)
			if pref != nil {
				p.scopedPreferred[g] = intersectNil(p.scopedPreferred[g], pref)
			}
		}
	}
}

// scopeNodes is w without the nodes the scoped spreads whose PodGroups are exactly s's block,
// with the positions kept; ok is false when no scope applies to s.
func (p *planner) scopeNodes(s *Set, w work) (pos []int, ok bool) {
	var apply []scope
	for _, sc := range p.in.scopes {
		if len(sc.groups) == len(s.Groups) && containsAll(s.Groups, sc.groups) {
			apply = append(apply, sc)
		}
	}
	if len(apply) == 0 {
		return nil, false
	}
	for at, i := range w.idx {
		keep := true
		for _, sc := range apply {
			if sc.blocked[i] {
				keep = false
				break
			}
		}
		if keep {
			pos = append(pos, at)
		}
	}
	return pos, true
}

func (u *Unfit) spreadError() string {
	return fmt.Sprintf("%s needs %s within a domain of its own: %s", u.Set.What, u.Demand, u.spreadWhy)
}

// markBlocked marks the nodes a required spread over key takes out: those in a domain another
// replica uses and those without the key (in no domain).
func markBlocked(u spreadUse, blocked []bool) {
	for i, v := range u.d.of {
		if v < 0 || u.count[v] > 0 {
			blocked[i] = true
		}
	}
}

// BlockRequiredSpread takes the nodes the gang's required spreads forbid out of nodes (no
// room, no class admitted), so that preemption frees room only where the gang may go. A
// required spread scoped to some PodGroups (a scaling-group replica in a base PodGang) forbids
// nodes to those PodGroups only, which blocking nodes cannot say: it is returned, for the
// caller to hand to Choose (Input.Spread) with the nodes.
func BlockRequiredSpread(nodes []Node, spreads []Spread) (scoped []Spread) {
	var x *Index
	blocked := make([]bool, len(nodes))
	for i := range spreads {
		switch {
		case !spreads[i].Required:
		case len(spreads[i].PodGroups) > 0:
			scoped = append(scoped, spreads[i])
		default:
			if x == nil {
				x = NewIndex(nodes)
			}
			markBlocked(spreads[i].use(x), blocked)
		}
	}
	for n := range nodes {
		if blocked[n] {
			nodes[n].Free, nodes[n].Excluded = capacity.Resources{}, capacity.AnyClass
		}
	}
	return scoped
}
