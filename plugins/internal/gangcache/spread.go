package gangcache

import (
	"slices"

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
	peers := c.byName[e.namespace]
	for i, rs := range own {
		out[i] = placement.Spread{Key: rs.TopologyKey, Required: rs.Required, MaxSkew: rs.MaxSkew, PodGroups: rs.PodGroupNames,
			Others: make([]placement.SpreadMember, 0, len(peers))}
		byMember[i] = make(map[string]int, len(peers))
	}
	// Only the gangs of its namespace, and of those only the ones holding nodes, can count.
	for _, o := range peers {
		if o == e || len(o.held) == 0 || o.podGang == nil || len(o.podGang.Spec.ReplicaSpreadConstraints) == 0 {
			continue
		}
		for i, rs := range own {
			for _, ors := range o.podGang.Spec.ReplicaSpreadConstraints {
				if ors.Group != rs.Group || ors.TopologyKey != rs.TopologyKey || ors.Member == rs.Member {
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
				// A scoped member is only its PodGroups' pods (a scaling-group replica inside
				// a base PodGang).
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
	}
	for i := range out {
		if len(out[i].Others) == 0 {
			out[i].Others = nil
		}
	}
	return out
}
