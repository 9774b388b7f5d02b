package gangcache

import (
	"slices"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Spreads are the replica spreads of gang key (PodGang spec.replicaSpreadConstraints) with,
// for each, the nodes that the other replicas of its spread group hold: the assumed or bound
// members of every PodGang in its namespace that names the same group and key but another
// member. A replica's own PodGangs (same member) are not counted, nor the gang itself (its own
// members of other scoped entries are kept apart by its anti-affinity groups). An entry with
// podGroupNames counts only the nodes of those PodGroups. nil without spreads.
func (c *Cache) Spreads(key string) []placement.Spread {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil || len(e.podGang.Spec.ReplicaSpreadConstraints) == 0 {
		return nil
	}
	own := e.podGang.Spec.ReplicaSpreadConstraints
	out := make([]placement.Spread, len(own))
	// Per constraint, the members by replica (positions in its Others): a replica's PodGangs
	// merge into one member.
	byMember := make([]map[string]int, len(own))
	for i, rs := range own {
		peers := len(c.spreaders[spreadGroup{namespace: e.namespace, group: rs.Group, key: rs.TopologyKey}])
		out[i] = placement.Spread{Key: rs.TopologyKey, Required: rs.Required, MaxSkew: rs.MaxSkew, PodGroups: rs.PodGroupNames,
			Others: make([]placement.SpreadMember, 0, peers)}
		byMember[i] = make(map[string]int, peers)
	}
	for i, rs := range own {
		for _, ref := range c.spreaders[spreadGroup{namespace: e.namespace, group: rs.Group, key: rs.TopologyKey}] {
			o := ref.e
			if o == e || len(o.held) == 0 {
				continue
			}
			ors := &o.podGang.Spec.ReplicaSpreadConstraints[ref.at]
			if ors.Member == rs.Member {
				continue
			}
			at, known := byMember[i][ors.Member]
			var nodes []string
			if known {
				nodes = out[i].Others[at].Nodes
			} else {
				nodes = make([]string, 0, len(o.held))
			}
			before := len(nodes)
			// A scoped member is only its PodGroups' pods (a scaling-group replica inside a
			// base PodGang).
			for _, h := range o.held {
				if len(ors.PodGroupNames) == 0 || slices.Contains(ors.PodGroupNames, h.group) {
					nodes = append(nodes, h.node)
				}
			}
			switch {
			case len(nodes) == before:
			case !known:
				byMember[i][ors.Member] = len(out[i].Others)
				out[i].Others = append(out[i].Others, placement.SpreadMember{Gang: o.podGang.Name, Nodes: nodes})
			default:
				m := &out[i].Others[at]
				m.Nodes = nodes
				if o.podGang.Name < m.Gang {
					m.Gang = o.podGang.Name
				}
			}
		}
	}
	for i := range out {
		if len(out[i].Others) == 0 {
			out[i].Others = nil
		}
	}
	return out
}

// spreadGroup is one spread group of a namespace over one key: the replicas that spread
// against each other.
type spreadGroup struct {
	namespace, group, key string
}

// spreadRef is one replica spread entry of a gang's PodGang: position at of its
// spec.replicaSpreadConstraints.
type spreadRef struct {
	e  *entry
	at int
}

// indexSpreads moves gang e's entries in c.spreaders from those of PodGang was to those of is
// (either may be nil); c.mu is held for writing.
func (c *Cache) indexSpreads(e *entry, was, is *v1alpha1.PodGang) {
	var before, after []v1alpha1.ReplicaSpreadConstraint
	if was != nil {
		before = was.Spec.ReplicaSpreadConstraints
	}
	if is != nil {
		after = is.Spec.ReplicaSpreadConstraints
	}
	if slices.EqualFunc(before, after, sameSpreadEntry) {
		return
	}
	for _, rs := range before {
		k := spreadGroup{namespace: e.namespace, group: rs.Group, key: rs.TopologyKey}
		refs := slices.DeleteFunc(c.spreaders[k], func(r spreadRef) bool { return r.e == e })
		if len(refs) == 0 {
			delete(c.spreaders, k)
		} else {
			c.spreaders[k] = refs
		}
	}
	for at, rs := range after {
		k := spreadGroup{namespace: e.namespace, group: rs.Group, key: rs.TopologyKey}
		c.spreaders[k] = append(c.spreaders[k], spreadRef{e: e, at: at})
	}
}

// sameSpreadEntry: a and b are indexed alike (same group, key and place), and Spreads reads
// the same of them.
func sameSpreadEntry(a, b v1alpha1.ReplicaSpreadConstraint) bool {
	return a.Group == b.Group && a.TopologyKey == b.TopologyKey && a.Member == b.Member && slices.Equal(a.PodGroupNames, b.PodGroupNames)
}
