package gang

import (
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// intersectSpread keeps, of the nodes within the gang's domains (nil: any node), those its
// required replica spreads leave it.
func intersectSpread(within sets.Set[string], plan *placement.Plan) sets.Set[string] {
	req := plan.SpreadRequiredNodes()
	switch {
	case req == nil:
		return within
	case within == nil:
		return req
	}
	return within.Intersection(req)
}

// scopedNodes are, per PodGroup of demands that a spread scoped to it covers (a scaling-group
// replica in a base PodGang), the nodes it may use: those its required spreads leave it, inside
// its required domain when it has one. Reserving room for such a PodGroup anywhere else would
// hold back nodes it may not use. nil when no spread is scoped to a PodGroup of demands.
func scopedNodes(demands capacity.Demands, plan *placement.Plan) map[string]sets.Set[string] {
	var out map[string]sets.Set[string]
	for _, d := range demands {
		scoped := plan.SpreadRequiredNodesFor(d.Group)
		if scoped == nil || scoped.Equal(plan.SpreadRequiredNodes()) {
			continue
		}
		on := scoped
		if allowed := plan.AllowedNodes(d.Group); allowed != nil {
			on = allowed.Intersection(scoped)
		}
		if out == nil {
			out = map[string]sets.Set[string]{}
		}
		out[d.Group] = on
	}
	return out
}
