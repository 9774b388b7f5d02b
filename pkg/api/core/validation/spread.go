package validation

import (
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// validateReplicaSpread checks the replicaSpreadConstraints of a PodCliqueSet's constraints
// against its ClusterTopology: they sit on the PodCliqueSet-level constraint (spreading its
// replicas) or a scaling group's (spreading the scaling group's replicas within one
// PodCliqueSet replica), not on a clique's; each domain is a level of the topology, and no
// spread domain is narrower than the domain each replica is packed into (required, else
// preferred): a replica packed into one rack cannot be spread over hosts. A required
// scaling-group spread is also not broader than the PodCliqueSet's required pack domain: the
// scaling group's replicas all live in that one domain, so spreading racks inside a block can
// be met, spreading zones inside a block cannot.
func validateReplicaSpread(refs []*constraintRef, ct *corev1alpha1.ClusterTopology, domains []string) field.ErrorList {
	var errs field.ErrorList
	for _, r := range refs {
		if len(r.tc.ReplicaSpreadConstraints) == 0 {
			continue
		}
		sp := r.path.Child("replicaSpreadConstraints")
		if r.what != rootWhat && !r.scalingGroup() {
			errs = append(errs, field.Forbidden(sp, "replicas are spread by the PodCliqueSet-level or a scaling group's topologyConstraint only, not a clique's"))
			continue
		}
		var outer corev1alpha1.TopologyDomain
		var outerPath *field.Path
		if r.scalingGroup() && r.parent != nil {
			outer, outerPath = r.parent.tc.RequiredDomain(), r.parent.requiredPath()
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
			case c.Required() && outer != "" && ct.Spec.LevelIndex(outer) >= 0 && level < ct.Spec.LevelIndex(outer):
				errs = append(errs, field.Invalid(dp, c.Domain, fmt.Sprintf(
					"a required spread of the scaling group's replicas must be equal to or narrower than the domain %q the PodCliqueSet replica is packed into (%s) in ClusterTopology %q: they all live in one %s",
					outer, outerPath, ct.Name, outer)))
			}
		}
	}
	return errs
}

// scalingGroup reports whether the constraint is a scaling group's.
func (c *constraintRef) scalingGroup() bool { return strings.HasPrefix(c.what, "scaling group ") }

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
