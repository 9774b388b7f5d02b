package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// validateReplicaSpread checks the replicaSpreadConstraints of a PodCliqueSet's constraints
// against its ClusterTopology: they sit on the PodCliqueSet-level constraint only (they spread
// its replicas), each domain is a level of the topology, and no spread domain is narrower than
// the domain each replica is packed into (required, else preferred): a replica packed into one
// rack cannot be spread over hosts.
func validateReplicaSpread(refs []*constraintRef, ct *corev1alpha1.ClusterTopology, domains []string) field.ErrorList {
	var errs field.ErrorList
	for _, r := range refs {
		if len(r.tc.ReplicaSpreadConstraints) == 0 {
			continue
		}
		sp := r.path.Child("replicaSpreadConstraints")
		if r.what != rootWhat {
			errs = append(errs, field.Forbidden(sp, "replicas are spread by the PodCliqueSet-level topologyConstraint only (spec.template.topologyConstraint)"))
			continue
		}
		pack, packPath := r.tc.RequiredDomain(), r.requiredPath()
		if pack == "" {
			pack, packPath = r.tc.PreferredDomain(), r.preferredPath()
		}
		for i := range r.tc.ReplicaSpreadConstraints {
			c := &r.tc.ReplicaSpreadConstraints[i]
			dp := sp.Index(i).Child("domain")
			level := ct.Spec.LevelIndex(c.Domain)
			switch {
			case level < 0:
				errs = append(errs, field.NotSupported(dp, c.Domain, domains))
			case pack != "" && ct.Spec.LevelIndex(pack) >= 0 && level > ct.Spec.LevelIndex(pack):
				errs = append(errs, field.Invalid(dp, c.Domain, fmt.Sprintf(
					"must be equal to or broader than the domain %q each replica is packed into (%s) in ClusterTopology %q", pack, packPath, ct.Name)))
			}
		}
	}
	return errs
}

// sameReplicaSpread: the repairs of an update (immutableTopology) never change the spread.
func sameReplicaSpread(a, b *corev1alpha1.TopologyConstraint) bool {
	var x, y []corev1alpha1.ReplicaSpreadConstraint
	if a != nil {
		x = a.ReplicaSpreadConstraints
	}
	if b != nil {
		y = b.ReplicaSpreadConstraints
	}
	return apiequality.Semantic.DeepEqual(x, y)
}
