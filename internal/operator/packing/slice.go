package packing

import (
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// SliceKey is the slice of one clique with its domain resolved to a node-label key.
type SliceKey struct {
	Key        string
	Constraint *corev1alpha1.SliceConstraint
}

// translateSlices resolves the clique-level slices; a domain the ClusterTopology lacks is
// recorded in missing and dropped (the clique is then packed without slices).
func translateSlices(t *corev1alpha1.PodCliqueSetTemplateSpec, keys map[corev1alpha1.TopologyDomain]string,
	missing map[corev1alpha1.TopologyDomain]bool) map[string]SliceKey {
	out := map[string]SliceKey{}
	for _, c := range t.Cliques {
		if c == nil || c.TopologyConstraint == nil || c.TopologyConstraint.Slice == nil {
			continue
		}
		sl := c.TopologyConstraint.Slice
		key, ok := keys[sl.Domain]
		if !ok {
			missing[sl.Domain] = true
			continue
		}
		out[c.Name] = SliceKey{Key: key, Constraint: sl}
	}
	return out
}

// PodGroupSlices is the slices of the PodGroup of a clique with replicas pods; nil when the
// clique is not sliced (or its slice domain does not resolve).
func (t Translated) PodGroupSlices(clique string, replicas int32) *schedv1alpha1.PodGroupSlices {
	s, ok := t.Slices[clique]
	if !ok {
		return nil
	}
	sizes := s.Constraint.SliceSizes(replicas)
	if len(sizes) == 0 {
		return nil
	}
	return &schedv1alpha1.PodGroupSlices{TopologyKey: s.Key, Required: s.Constraint.Required(), Sizes: sizes}
}
