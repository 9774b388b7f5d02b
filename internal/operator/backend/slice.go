package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// RefuseSlices is the answer of a backend whose scheduler cannot cut a clique into slices that
// each take a domain of their own (its gang objects pack a group into one domain, with no
// "one domain per part, all parts apart"): a required slice is rejected on its field, naming
// the scheduler; a preferred one is accepted with a warning that it is ignored.
func RefuseSlices(pcs *corev1alpha1.PodCliqueSet, scheduler string) ([]string, field.ErrorList) {
	var warnings []string
	var errs field.ErrorList
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil || c.TopologyConstraint == nil || c.TopologyConstraint.Slice == nil {
			continue
		}
		sl := c.TopologyConstraint.Slice
		p := field.NewPath("spec", "template", "cliques").Index(i).Child("topologyConstraint", "slice")
		if sl.Required() {
			errs = append(errs, field.Forbidden(p.Child("whenUnsatisfiable"), fmt.Sprintf(
				"%s cannot place each slice of clique %q whole in a %s of its own; use whenUnsatisfiable: ScheduleAnyway (ignored there) or grove-scheduler",
				scheduler, c.Name, sl.Domain)))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: %s does not cut cliques into slices; the preferred slices over %s domains are ignored",
			p, scheduler, sl.Domain))
	}
	return warnings, errs
}
