package backend

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// ReplicaWideRequired finds a PodCliqueSet-level required domain that must hold across
// PodGangs: the PodCliqueSet can have scaled PodGangs (a scaling group whose replicas or
// autoscaler maximum exceed its minAvailable), and every PodGang of a replica must land in the
// one domain value the first of them took (PodGang spec.sharedTopologyConstraint). It returns
// the field path of the required domain and the first such scaling group's name; nil when
// nothing spans PodGangs. A backend whose scheduler cannot keep separate gangs in one domain
// rejects the PodCliqueSet on that path.
func ReplicaWideRequired(pcs *corev1alpha1.PodCliqueSet) (*field.Path, string) {
	t := &pcs.Spec.Template
	tc := t.TopologyConstraint
	if tc == nil || tc.RequiredDomain() == "" {
		return nil, ""
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		most := corev1alpha1.ScalingGroupReplicas(g)
		if g.ScaleConfig != nil {
			most = max(most, g.ScaleConfig.MaxReplicas)
		}
		if most <= corev1alpha1.ScalingGroupMinAvailable(g) {
			continue
		}
		p := field.NewPath("spec", "template", "topologyConstraint", "packDomain")
		if tc.Pack != nil && tc.Pack.Required != "" {
			p = field.NewPath("spec", "template", "topologyConstraint", "pack", "required")
		}
		return p, g.Name
	}
	return nil, ""
}
