package topology

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// narrowBySlice keeps a member of a sliced PodGroup to the domain the plan chose for its slice
// (its grove.io/slice-index label) among the nodes it may use (allowed; nil means every node).
// Filter checks the domain too, so a replacement for a lost member lands where its slice runs.
func narrowBySlice(s *cycleState, plan *placement.Plan, group string, pod *v1.Pod, allowed sets.Set[string]) sets.Set[string] {
	index, ok := gangcache.SliceIndex(pod.Labels)
	if !ok {
		return allowed
	}
	d, ok := plan.Slice(group, index)
	if !ok {
		return allowed
	}
	c := d.Choice
	s.slice = &c
	if allowed == nil {
		return d.Nodes
	}
	return allowed.Intersection(d.Nodes)
}

// sliceKeyChanged reports whether the node's value of a key the gang slices a PodGroup by
// changed: a node joined or left a domain a slice may take.
func sliceKeyChanged(pg *v1alpha1.PodGang, oldNode, newNode *v1.Node) bool {
	for _, g := range pg.Spec.PodGroups {
		if g.Slices == nil {
			continue
		}
		was, had := oldNode.Labels[g.Slices.TopologyKey]
		is, has := newNode.Labels[g.Slices.TopologyKey]
		if was != is || had != has {
			return true
		}
	}
	return false
}
