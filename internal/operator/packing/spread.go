package packing

import (
	"fmt"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// SpreadKey is one replica spread of a PodCliqueSet with its domain resolved to a node-label key.
type SpreadKey struct {
	Key      string
	Required bool
	MaxSkew  int32
}

// translateSpread resolves the replicaSpreadConstraints of one constraint; a domain the
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

// ScalingGroupReplicaSpread is the spread entry of one scaling-group replica of scaling group
// sg: group is the PodCliqueScalingGroup (one per PodCliqueSet replica), member the
// scaling-group replica. podGroups are its PodGroups when it lives in the base PodGang (the
// entry then binds only them), nil for a scaled PodGang (the whole gang). nil without spread.
func (t Translated) ScalingGroupReplicaSpread(sg, group, member string, podGroups []string) []schedv1alpha1.ReplicaSpreadConstraint {
	var out []schedv1alpha1.ReplicaSpreadConstraint
	for _, s := range t.ScalingGroupSpread[sg] {
		out = append(out, schedv1alpha1.ReplicaSpreadConstraint{Group: group, Member: member, TopologyKey: s.Key,
			Required: s.Required, MaxSkew: s.MaxSkew, PodGroupNames: append([]string(nil), podGroups...)})
	}
	return out
}

// ScalingGroupApart keeps the scaling-group replicas a base PodGang holds (members: replica
// name to its PodGroups, in order) in different domains of each spread key of scaling group
// sg: one anti-affinity group per key, named after the PodCliqueScalingGroup. nil with fewer
// than two such replicas (the scheduler's anti-affinity needs two) or without spread.
func (t Translated) ScalingGroupApart(sg, group string, names []string, members map[string][]string) []schedv1alpha1.RoleAffinityGroup {
	if len(names) < 2 {
		return nil
	}
	var out []schedv1alpha1.RoleAffinityGroup
	for k, s := range t.ScalingGroupSpread[sg] {
		g := schedv1alpha1.RoleAffinityGroup{Name: group, TopologyKey: s.Key, Required: s.Required}
		if k > 0 {
			g.Name = fmt.Sprintf("%s-%d", group, k)
		}
		for _, n := range names {
			g.Members = append(g.Members, schedv1alpha1.RoleAffinityMember{Name: n, PodGroupNames: append([]string(nil), members[n]...)})
		}
		out = append(out, g)
	}
	return out
}
