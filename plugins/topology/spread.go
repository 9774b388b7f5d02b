package topology

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// narrowBySpread applies the gang's replica spreads to the nodes a member may use (allowed; nil
// means every node), spreads scoped to the member's PodGroup included: the nodes of domains other replicas use are out for good under a required
// spread (Filter checks them too); under a preferred one the member is steered to the least
// used domains the plan chose, as for a preferred domain — until a member misses them, after
// which its gang searches every node again.
func narrowBySpread(s *cycleState, plan *placement.Plan, group string, allowed sets.Set[string], missed bool) sets.Set[string] {
	intersect := func(a, b sets.Set[string]) sets.Set[string] {
		if a == nil {
			return b
		}
		return a.Intersection(b)
	}
	if req := plan.SpreadRequiredNodesFor(group); req != nil {
		s.spreadAllowed = req
		allowed = intersect(allowed, req)
	}
	if !missed {
		// Asked about the required domain's nodes only, not named among every node.
		if narrowed := plan.SpreadNodesWithin(group, allowed); narrowed != nil && narrowed.Len() > 0 {
			allowed, s.narrowed = narrowed, true
		}
	}
	return allowed
}

// spreadKeyChanged reports whether the node's value of a key the gang spreads its replica by
// changed: a domain other replicas use may have become free, or a node joined a free one.
func spreadKeyChanged(pg *v1alpha1.PodGang, oldNode, newNode *v1.Node) bool {
	for _, rs := range pg.Spec.ReplicaSpreadConstraints {
		was, had := oldNode.Labels[rs.TopologyKey]
		is, has := newNode.Labels[rs.TopologyKey]
		if was != is || had != has {
			return true
		}
	}
	return false
}
