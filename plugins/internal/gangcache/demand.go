package gangcache

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/order"
)

// Demands is what a gang still needs placed: count pods per PodGroup, each with its members'
// shape and an eligibility class for its node rules (classes tells which nodes admit which
// class). pod, the member being attempted, stands for its own PodGroup and for any PodGroup of
// which no member was seen yet. PodGroups are taken in the order of order; zero counts are left
// out.
func (c *Cache) Demands(key string, pod *v1.Pod, order []string, count map[string]int32) (capacity.Demands, *nodes.Classes) {
	classes := &nodes.Classes{}
	return c.DemandsWith(classes, key, pod, order, count), classes
}

// DemandsWith is Demands with classes shared with other gangs' demands (the gang's group, when
// one domain is chosen for all of it).
func (c *Cache) DemandsWith(classes *nodes.Classes, key string, pod *v1.Pod, order []string, count map[string]int32) capacity.Demands {
	_, group, _ := GangKey(pod)
	own := TemplateOf(pod)
	var out capacity.Demands
	for _, name := range order {
		n := count[name]
		if n <= 0 {
			continue
		}
		t, ok := c.Template(key, name)
		if name == group || !ok {
			t = own
		}
		out = append(out, capacity.Demand{Group: name, Shape: t.Shape, Count: int64(n), Class: classes.Of(t.Rules)})
	}
	return out
}

// GroupGang is another PodGang of a gang's group (the same spec.sharedTopologyConstraint group
// in its namespace).
type GroupGang struct {
	Key     string
	PodGang *v1alpha1.PodGang
	// Quorum and Full count, per PodGroup, its minReplicas and its full size (its pod
	// references, or the members seen when there are more).
	Quorum, Full map[string]int32
	// Placed: a member holds a node.
	Placed bool
	entry  order.Entry
}

// GroupGangs lists the other PodGangs of gang key's group, in the order of claims on room
// (base first); nil for a gang without a group.
func (c *Cache) GroupGangs(key string) []GroupGang {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil || e.podGang.Spec.SharedTopologyConstraint == nil {
		return nil
	}
	ns, group := e.podGang.Namespace, e.podGang.Spec.SharedTopologyConstraint.Group
	var out []GroupGang
	for _, o := range c.byName[ns] {
		other := o.key()
		if other == key || o.podGang == nil || o.podGang.Spec.SharedTopologyConstraint == nil || o.podGang.Spec.SharedTopologyConstraint.Group != group {
			continue
		}
		g := GroupGang{Key: other, PodGang: o.podGang, Quorum: map[string]int32{}, Full: map[string]int32{}, entry: o.orderEntry(other, tierOf(o.podGang), o.topPriority)}
		seen := map[string]int32{}
		for _, m := range o.members {
			seen[m.group]++
			g.Placed = g.Placed || m.holdsNode()
		}
		for _, pg := range o.podGang.Spec.PodGroups {
			g.Quorum[pg.Name] = pg.MinReplicas
			g.Full[pg.Name] = max(pg.MinReplicas, int32(len(pg.PodReferences)), seen[pg.Name])
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b GroupGang) int { return order.Compare(a.entry, b.entry) })
	return out
}

func (e *entry) key() string { return e.namespace + "/" + e.name }
