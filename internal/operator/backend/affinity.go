package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// RefuseRoleAffinity is the answer of a backend whose scheduler cannot keep roles of a replica
// together or apart at a topology level (its gang objects carry no such rule between
// subgroups): a required group is rejected on its whenUnsatisfiable, naming the scheduler; a
// preferred one is accepted with a warning that it is ignored.
func RefuseRoleAffinity(pcs *corev1alpha1.PodCliqueSet, scheduler string) ([]string, field.ErrorList) {
	tc := pcs.Spec.Template.TopologyConstraint
	if tc == nil {
		return nil, nil
	}
	var warnings []string
	var errs field.ErrorList
	p := field.NewPath("spec", "template", "topologyConstraint")
	for _, kind := range []struct {
		field, verb string
		groups      []corev1alpha1.RoleAffinityGroup
	}{{"affinityGroups", "together in one", tc.AffinityGroups}, {"antiAffinityGroups", "apart in separate", tc.AntiAffinityGroups}} {
		for i := range kind.groups {
			g := &kind.groups[i]
			gp := p.Child(kind.field).Index(i)
			if g.Required() {
				errs = append(errs, field.Forbidden(gp.Child("whenUnsatisfiable"), fmt.Sprintf(
					"%s cannot keep roles %v %s domains; use whenUnsatisfiable: ScheduleAnyway (ignored there) or grove-scheduler",
					scheduler, g.Members, kind.verb+" "+string(g.Domain))))
				continue
			}
			warnings = append(warnings, fmt.Sprintf("%s: %s does not place roles relative to each other; the preferred group %q is ignored",
				gp, scheduler, g.Name))
		}
	}
	return warnings, errs
}
