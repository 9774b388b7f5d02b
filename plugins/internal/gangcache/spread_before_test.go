package gangcache

import "github.com/ai-dynamo/grove/plugins/internal/placement"

// spreadsBefore is Cache.Spreads as it was before the entries kept their held nodes (walking
// every member of every other gang), kept to check that the two agree.
func (c *Cache) spreadsBefore(key string) []placement.Spread {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil || len(e.podGang.Spec.ReplicaSpreadConstraints) == 0 {
		return nil
	}
	own := e.podGang.Spec.ReplicaSpreadConstraints
	out := make([]placement.Spread, len(own))
	// Per constraint, the members by replica: a replica's PodGangs merge into one member.
	byMember := make([]map[string]*placement.SpreadMember, len(own))
	for i, rs := range own {
		out[i] = placement.Spread{Key: rs.TopologyKey, Required: rs.Required, MaxSkew: rs.MaxSkew, PodGroups: rs.PodGroupNames}
		byMember[i] = map[string]*placement.SpreadMember{}
	}
	ns := e.podGang.Namespace
	for other, o := range c.gangs {
		if other == key || o.podGang == nil || o.podGang.Namespace != ns || len(o.podGang.Spec.ReplicaSpreadConstraints) == 0 {
			continue
		}
		var nodes []string
		byGroup := map[string][]string{}
		for _, m := range o.members {
			if m.holdsNode() {
				nodes = append(nodes, m.node)
				byGroup[m.group] = append(byGroup[m.group], m.node)
			}
		}
		if len(nodes) == 0 {
			continue
		}
		for i, rs := range own {
			for _, ors := range o.podGang.Spec.ReplicaSpreadConstraints {
				if ors.Group != rs.Group || ors.TopologyKey != rs.TopologyKey || ors.Member == rs.Member {
					continue
				}
				held := nodes
				if len(ors.PodGroupNames) > 0 {
					// A scoped member is only its PodGroups' pods (a scaling-group replica
					// inside a base PodGang).
					held = nil
					for _, g := range ors.PodGroupNames {
						held = append(held, byGroup[g]...)
					}
					if len(held) == 0 {
						continue
					}
				}
				m := byMember[i][ors.Member]
				if m == nil {
					m = &placement.SpreadMember{Gang: o.podGang.Name}
					byMember[i][ors.Member] = m
				}
				if o.podGang.Name < m.Gang {
					m.Gang = o.podGang.Name
				}
				m.Nodes = append(m.Nodes, held...)
			}
		}
	}
	for i := range out {
		for _, m := range byMember[i] {
			out[i].Others = append(out[i].Others, *m)
		}
	}
	return out
}
