package packing

import (
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// SpreadKey is one replica spread of a PodCliqueSet with its domain resolved to a node-label key.
type SpreadKey struct {
	Key      string
	Required bool
	MaxSkew  int32
}

// translateSpread resolves the PodCliqueSet-level replicaSpreadConstraints; a domain the
// ClusterTopology lacks is recorded in missing and dropped.
func translateSpread(tc *corev1alpha1.TopologyConstraint, keys map[corev1alpha1.TopologyDomain]string,
	missing map[corev1alpha1.TopologyDomain]bool) []SpreadKey {
	if tc == nil {
		return nil
	}
	var out []SpreadKey
	for i := range tc.ReplicaSpreadConstraints {
		c := &tc.ReplicaSpreadConstraints[i]
		key, ok := keys[c.Domain]
		if !ok {
			missing[c.Domain] = true
			continue
		}
		s := SpreadKey{Key: key, Required: c.Required()}
		if !s.Required {
			s.MaxSkew = c.Skew()
		}
		out = append(out, s)
	}
	return out
}

// ReplicaSpread is what every PodGang of one PodCliqueSet replica carries so that the replicas
// spread against each other: group is the PodCliqueSet, member the replica (its base PodGang's
// name), so that the replica's own PodGangs never push each other away. nil without spread.
func (t Translated) ReplicaSpread(group, member string) []schedv1alpha1.ReplicaSpreadConstraint {
	var out []schedv1alpha1.ReplicaSpreadConstraint
	for _, s := range t.Spread {
		out = append(out, schedv1alpha1.ReplicaSpreadConstraint{Group: group, Member: member, TopologyKey: s.Key,
			Required: s.Required, MaxSkew: s.MaxSkew})
	}
	return out
}
