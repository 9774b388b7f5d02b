package placement

import (
	"fmt"
	"sort"
	"strings"

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

// spreadUse counts, per value of the spread's key, the other replicas that use it, and names
// one of their PodGangs per value.
func (s *Spread) use(labels map[string]map[string]string) (count map[string]int, by map[string]string) {
	count, by = map[string]int{}, map[string]string{}
	for _, m := range s.Others {
		seen := sets.New[string]()
		for _, n := range m.Nodes {
			if v, ok := labels[n][s.Key]; ok && !seen.Has(v) {
				seen.Insert(v)
				count[v]++
				if by[v] == "" || m.Gang < by[v] {
					by[v] = m.Gang
				}
			}
		}
	}
	return count, by
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
	labels := make(map[string]map[string]string, len(in.Nodes))
	for i := range in.Nodes {
		labels[in.Nodes[i].Name] = in.Nodes[i].Labels
	}
	blocked := make([]bool, len(in.Nodes))
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
		scopes = append(scopes, scope{groups: s.PodGroups, blocked: make([]bool, len(in.Nodes))})
		scopeOf[k] = len(scopes) - 1
		return len(scopes) - 1
	}
	var required []requiredUse
	gangRequired := false
	type preferredUse struct {
		s     *Spread
		count map[string]int
		min   int
		max   int
		scope int
	}
	var preferred []preferredUse
	for i := range spreads {
		s := &spreads[i]
		count, by := s.use(labels)
		sc := scopeFor(s)
		if s.Required {
			required = append(required, requiredUse{s: s, count: count, by: by})
			if sc >= 0 {
				markBlocked(in.Nodes, s.Key, count, scopes[sc].blocked)
			} else {
				markBlocked(in.Nodes, s.Key, count, blocked)
				gangRequired = true
			}
			continue
		}
		u := preferredUse{s: s, count: count, min: -1, scope: sc}
		for n := range in.Nodes {
			if v, ok := in.Nodes[n].Labels[s.Key]; ok {
				c := count[v]
				if u.min < 0 || c < u.min {
					u.min = c
				}
				u.max = max(u.max, c)
			}
		}
		preferred = append(preferred, u)
	}
	var lastUnfit *Unfit
	for tier := 0; ; tier++ {
		nodes := make([]Node, len(in.Nodes))
		copy(nodes, in.Nodes)
		out, restricted, all := make([]bool, len(nodes)), false, true
		// The scopes' blocks for this tier: required ones plus the preferred tier's.
		tierScopes := make([]scope, len(scopes))
		scopeOut := make([][]bool, len(scopes))
		for k := range scopes {
			tierScopes[k] = scope{groups: scopes[k].groups, blocked: append([]bool(nil), scopes[k].blocked...)}
			scopeOut[k] = make([]bool, len(nodes))
		}
		for n := range nodes {
			for _, u := range preferred {
				limit := u.min + int(max(u.s.MaxSkew, 1)) - 1 + tier
				if limit < u.max {
					all = false
				}
				if v, ok := nodes[n].Labels[u.s.Key]; ok && u.count[v] > limit {
					if u.scope >= 0 {
						tierScopes[u.scope].blocked[n], scopeOut[u.scope][n] = true, true
					} else {
						out[n], restricted = true, true
					}
				}
			}
			if out[n] || blocked[n] {
				nodes[n].Free, nodes[n].Excluded = capacity.Resources{}, capacity.AnyClass
			}
		}
		trial := in
		trial.Nodes = nodes
		trial.scopes = tierScopes
		plan, unfit := Choose(trial)
		if unfit == nil {
			plan.recordScopes(nodes, scopes, scopeOut)
			if gangRequired {
				plan.spreadRequired = sets.New[string]()
				for n := range nodes {
					if !blocked[n] {
						plan.spreadRequired.Insert(nodes[n].Name)
					}
				}
			}
			if restricted {
				plan.spreadNodes = sets.New[string]()
				for n := range nodes {
					if !out[n] {
						plan.spreadNodes.Insert(nodes[n].Name)
					}
				}
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

type requiredUse struct {
	s     *Spread
	count map[string]int
	by    map[string]string
}

// spreadUnfit says that the gang waits for a domain of its own.
func spreadUnfit(required []requiredUse, inner *Unfit) *Unfit {
	u := &Unfit{Set: inner.Set, Demand: inner.Demand}
	if inner.Set == nil {
		u.Set = &Set{What: "the PodGang"}
	}
	var parts []string
	for _, r := range required {
		values := make([]string, 0, len(r.count))
		for v := range r.count {
			values = append(values, v)
		}
		sort.Strings(values)
		var used []string
		for i, v := range values {
			if i == 5 {
				used = append(used, fmt.Sprintf("and %d more", len(values)-i))
				break
			}
			used = append(used, fmt.Sprintf("%q (PodGang %s)", v, r.by[v]))
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
func (p *Plan) SpreadNodes() sets.Set[string] { return p.spreadNodes }

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
	return intersectNil(p.spreadNodes, p.scopedPreferred[group])
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
func (p *Plan) recordScopes(nodes []Node, scopes []scope, out [][]bool) {
	for k, sc := range scopes {
		var req, pref sets.Set[string]
		for n := range nodes {
			if sc.blocked[n] {
				continue
			}
			if req == nil {
				req = sets.New[string]()
			}
			req.Insert(nodes[n].Name)
		}
		if req == nil {
			req = sets.New[string]()
		}
		restricted := false
		for n := range nodes {
			if out[k][n] {
				restricted = true
				break
			}
		}
		if restricted {
			pref = sets.New[string]()
			for n := range nodes {
				if !out[k][n] {
					pref.Insert(nodes[n].Name)
				}
			}
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
// replica uses (count > 0) and those without the key (in no domain).
func markBlocked(nodes []Node, key string, count map[string]int, blocked []bool) {
	for n := range nodes {
		if v, ok := nodes[n].Labels[key]; !ok || count[v] > 0 {
			blocked[n] = true
		}
	}
}

// BlockRequiredSpread takes the nodes the gang's required spreads forbid out of nodes (no
// room, no class admitted), so that preemption frees room only where the gang may go. A
// required spread scoped to some PodGroups (a scaling-group replica in a base PodGang) forbids
// nodes to those PodGroups only, which blocking nodes cannot say: it is returned, for the
// caller to hand to Choose (Input.Spread) with the nodes.
func BlockRequiredSpread(nodes []Node, spreads []Spread) (scoped []Spread) {
	labels := make(map[string]map[string]string, len(nodes))
	for i := range nodes {
		labels[nodes[i].Name] = nodes[i].Labels
	}
	blocked := make([]bool, len(nodes))
	for i := range spreads {
		switch {
		case !spreads[i].Required:
		case len(spreads[i].PodGroups) > 0:
			scoped = append(scoped, spreads[i])
		default:
			count, _ := spreads[i].use(labels)
			markBlocked(nodes, spreads[i].Key, count, blocked)
		}
	}
	for n := range nodes {
		if blocked[n] {
			nodes[n].Free, nodes[n].Excluded = capacity.Resources{}, capacity.AnyClass
		}
	}
	return scoped
}
