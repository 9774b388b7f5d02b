package gangcache

import (
	v1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
)

// Demands is what a gang still needs placed: count pods per PodGroup, each with its members'
// shape and an eligibility class for its node rules (classes tells which nodes admit which
// class). pod, the member being attempted, stands for its own PodGroup and for any PodGroup of
// which no member was seen yet. PodGroups are taken in the order of order; zero counts are left
// out.
func (c *Cache) Demands(key string, pod *v1.Pod, order []string, count map[string]int32) (capacity.Demands, *nodes.Classes) {
	_, group, _ := GangKey(pod)
	own := TemplateOf(pod)
	classes := &nodes.Classes{}
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
	return out, classes
}
