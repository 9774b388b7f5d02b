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
	// Others are the other replicas of the group that hold nodes.
	Others []SpreadMember
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
	var required []requiredUse
	type preferredUse struct {
		s     *Spread
		count map[string]int
		min   int
		max   int
	}
	var preferred []preferredUse
	for i := range spreads {
		s := &spreads[i]
		count, by := s.use(labels)
		if s.Required {
			required = append(required, requiredUse{s: s, count: count, by: by})
			markBlocked(in.Nodes, s.Key, count, blocked)
			continue
		}
		u := preferredUse{s: s, count: count, min: -1}
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
		for n := range nodes {
			for _, u := range preferred {
				limit := u.min + int(max(u.s.MaxSkew, 1)) - 1 + tier
				if limit < u.max {
					all = false
				}
				if v, ok := nodes[n].Labels[u.s.Key]; ok && u.count[v] > limit {
					out[n], restricted = true, true
				}
			}
			if out[n] || blocked[n] {
				nodes[n].Free, nodes[n].Excluded = capacity.Resources{}, capacity.AnyClass
			}
		}
		trial := in
		trial.Nodes = nodes
		plan, unfit := Choose(trial)
		if unfit == nil {
			if len(required) > 0 {
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
		if _, unfit := Choose(in); unfit == nil {
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
		noun := DomainNoun(r.s.Key)
		parts = append(parts, fmt.Sprintf("no %s (%s) that holds it is free of the other replicas of its PodCliqueSet; in use: %s",
			noun, r.s.Key, strings.Join(used, ", ")))
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
// room, no class admitted), so that preemption frees room only where the gang may go.
func BlockRequiredSpread(nodes []Node, spreads []Spread) {
	labels := make(map[string]map[string]string, len(nodes))
	for i := range nodes {
		labels[nodes[i].Name] = nodes[i].Labels
	}
	blocked := make([]bool, len(nodes))
	for i := range spreads {
		if spreads[i].Required {
			count, _ := spreads[i].use(labels)
			markBlocked(nodes, spreads[i].Key, count, blocked)
		}
	}
	for n := range nodes {
		if blocked[n] {
			nodes[n].Free, nodes[n].Excluded = capacity.Resources{}, capacity.AnyClass
		}
	}
}
