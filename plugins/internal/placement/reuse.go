package placement

import (
	"fmt"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Reuse is the placement an earlier PodGang had (its status.lastPlacement), named by the gang's
// spec.reuseReservationRef: the gang-wide domains its nodes lie in are chosen again when they
// hold the gang, or, Required, always (the gang waits there rather than move).
type Reuse struct {
	// Nodes the earlier gang ran on.
	Nodes []string
	// Required: the gang waits for room in the earlier domains instead of moving.
	Required bool
	// From names the earlier PodGang, for messages.
	From string
}

// CauseReuseRequired is Unfit.Cause for a gang that waits for room where its earlier placement
// was, because its reuse is required.
const CauseReuseRequired = "reuse_required"

// RequireReuse returns the pack constraints of a gang whose reuse is required: the gang-wide
// preferred keys become required ones (the narrower level replaces the wider one, whose domain
// holds it), so the gang waits for its earlier domain at the narrowest level it was packed at,
// rather than only steering towards it.
func RequireReuse(spec *v1alpha1.PodGangSpec) *v1alpha1.PodGangSpec {
	out := spec.DeepCopy()
	if key := out.TopologyConstraint.Preferred(); key != "" {
		out.TopologyConstraint.PackConstraint = &v1alpha1.TopologyPackConstraint{Required: &key}
	}
	if key := out.SharedTopologyConstraint.Preferred(); key != "" {
		out.SharedTopologyConstraint.PackConstraint = &v1alpha1.TopologyPackConstraint{Required: &key}
	}
	return out
}

// gangWide are the sets that cover the whole gang: the shared set and the gang's own. Only they
// are pinned by an earlier placement: it records nodes, not which PodGroup ran on each.
func gangWide(t *Tree) []*Set {
	out := []*Set{t.Root}
	if t.Root.ID == SharedSetID && len(t.Root.Children) > 0 && t.Root.Children[0].ID == "podgang" {
		out = append(out, t.Root.Children[0])
	}
	return out
}

// collectReusePins finds, for the gang-wide sets, the domain of each key most of the earlier
// placement's nodes are in.
func (p *planner) collectReusePins() (required, preferred map[string]string) {
	required, preferred = map[string]string{}, map[string]string{}
	if p.in.Reuse == nil {
		return required, preferred
	}
	for _, s := range gangWide(p.in.Tree) {
		votes, prefVotes := map[string]int{}, map[string]int{}
		for _, name := range p.in.Reuse.Nodes {
			i, ok := p.byName[name]
			if !ok {
				continue // the node is gone
			}
			labels := p.in.Nodes[i].Labels
			if v, ok := labels[s.Required]; ok && s.Required != "" {
				votes[v]++
			}
			if v, ok := labels[s.Preferred]; ok && s.Preferred != "" {
				prefVotes[v]++
			}
		}
		if v := majority(map[string]map[string]int{s.ID: votes})[s.ID]; v != "" {
			required[s.ID] = v
		}
		if v := majority(map[string]map[string]int{s.ID: prefVotes})[s.ID]; v != "" {
			preferred[s.ID] = v
		}
	}
	return required, preferred
}

// chooseRequired chooses set s's required domain: where members already run, else the earlier
// placement's domain when it holds s (always, when reuse is required), else the tightest.
func (p *planner) chooseRequired(s *Set, w work) ([]int, string, *Unfit) {
	pinned, earlier := p.pins[s.ID], p.reuseRequired[s.ID]
	if _, ruledOut := p.in.RuledOut[Choice{Key: s.Required, Value: earlier}]; pinned != "" || earlier == "" ||
		ruledOut && !p.in.Reuse.Required {
		// A filter rejected the earlier domain: choosing it again would fail the same way.
		return p.chooseDomain(s, s.Required, pinned, w)
	}
	pos, value, unfit := p.chooseDomain(s, s.Required, earlier, w)
	if unfit == nil {
		return pos, value, nil
	}
	if p.in.Reuse.Required {
		unfit.Reuse = p.in.Reuse.From
		return nil, "", unfit
	}
	return p.chooseDomain(s, s.Required, "", w)
}

// preferredPin is the domain set s's preferred key is pinned to: where its members already are,
// else the earlier placement's when it holds s.
func (p *planner) preferredPin(s *Set, w work) string {
	if pin := p.preferredPins[s.ID]; pin != "" {
		return pin
	}
	earlier := p.reusePreferred[s.ID]
	if earlier == "" {
		return ""
	}
	if _, _, unfit := p.chooseDomain(s, s.Preferred, earlier, w); unfit != nil {
		return ""
	}
	return earlier
}

// reuseError says why a gang whose reuse is required waits.
func (u *Unfit) reuseError() string {
	inner := *u
	inner.Reuse = ""
	if inner.Pinned != "" && inner.Within == "" && len(inner.RuledOut) == 0 {
		return fmt.Sprintf("%s needs %s within %s %q (%s), where PodGang %s was placed before; its reuseReservation is Required, so it waits there; it fits %d",
			u.Set.What, u.Demand, DomainNoun(u.Key), u.Pinned, u.Key, u.Reuse, u.BestFits)
	}
	return inner.Error() + fmt.Sprintf("; its reuseReservation is Required, so it waits where PodGang %s was placed before", u.Reuse)
}
