package placement

// The replica spread choice as it was before it counted through the node index: the reference
// the equivalence test compares chooseSpread with.

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

func useBefore(s *Spread, labels map[string]map[string]string) (count map[string]int, by map[string]string) {
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
func chooseSpreadBefore(in Input) (*Plan, *Unfit) {
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
	var required []requiredUseBefore
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
		count, by := useBefore(s, labels)
		sc := scopeFor(s)
		if s.Required {
			required = append(required, requiredUseBefore{s: s, count: count, by: by})
			if sc >= 0 {
				markBlockedBefore(in.Nodes, s.Key, count, scopes[sc].blocked)
			} else {
				markBlockedBefore(in.Nodes, s.Key, count, blocked)
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
			recordScopesBefore(plan, nodes, scopes, scopeOut)
			if gangRequired {
				plan.spreadRequired = sets.New[string]()
				for n := range nodes {
					if !blocked[n] {
						plan.spreadRequired.Insert(nodes[n].Name)
					}
				}
			}
			if restricted {
				names := sets.New[string]()
				for n := range nodes {
					if !out[n] {
						names.Insert(nodes[n].Name)
					}
				}
				plan.spreadNodes = namedMarks(names)
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
			return nil, spreadUnfitBefore(required, lastUnfit)
		}
	}
	return nil, lastUnfit
}

type requiredUseBefore struct {
	s     *Spread
	count map[string]int
	by    map[string]string
}

func spreadUnfitBefore(required []requiredUseBefore, inner *Unfit) *Unfit {
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
func recordScopesBefore(p *Plan, nodes []Node, scopes []scope, out [][]bool) {
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
func markBlockedBefore(nodes []Node, key string, count map[string]int, blocked []bool) {
	for n := range nodes {
		if v, ok := nodes[n].Labels[key]; !ok || count[v] > 0 {
			blocked[n] = true
		}
	}
}

func blockRequiredSpreadBefore(nodes []Node, spreads []Spread) (scoped []Spread) {
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
			count, _ := useBefore(&spreads[i], labels)
			markBlockedBefore(nodes, spreads[i].Key, count, blocked)
		}
	}
	for n := range nodes {
		if blocked[n] {
			nodes[n].Free, nodes[n].Excluded = capacity.Resources{}, capacity.AnyClass
		}
	}
	return scoped
}

// namedMarks are marks already named (the reference made the set itself).
func namedMarks(names sets.Set[string]) *nodeMarks {
	m := &nodeMarks{}
	m.once.Do(func() { m.set = names })
	return m
}
