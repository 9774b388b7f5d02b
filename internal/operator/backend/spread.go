package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// RefuseReplicaSpread is the answer of a backend whose scheduler cannot spread a PodCliqueSet's
// or a scaling group's replicas over domains (its gang objects have no anti-affinity between gangs): a required
// spread is rejected on its field, naming the scheduler; a preferred one is accepted with a
// warning that it is ignored.
func RefuseReplicaSpread(pcs *corev1alpha1.PodCliqueSet, scheduler string) ([]string, field.ErrorList) {
	tp := field.NewPath("spec", "template")
	warnings, errs := refuseSpread(pcs.Spec.Template.TopologyConstraint, tp.Child("topologyConstraint", "replicaSpreadConstraints"),
		"a PodCliqueSet's replicas", scheduler)
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		w, e := refuseSpread(g.TopologyConstraint, tp.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint", "replicaSpreadConstraints"),
			fmt.Sprintf("scaling group %q's replicas", g.Name), scheduler)
		warnings, errs = append(warnings, w...), append(errs, e...)
	}
	return warnings, errs
}

func refuseSpread(tc *corev1alpha1.TopologyConstraint, p *field.Path, what, scheduler string) ([]string, field.ErrorList) {
	if tc == nil {
		return nil, nil
	}
	var warnings []string
	var errs field.ErrorList
	for i := range tc.ReplicaSpreadConstraints {
		c := &tc.ReplicaSpreadConstraints[i]
		if c.Required() {
			errs = append(errs, field.Forbidden(p.Index(i).Child("whenUnsatisfiable"), fmt.Sprintf(
				"%s cannot keep %s in separate %s domains; use whenUnsatisfiable: ScheduleAnyway (ignored there) or grove-scheduler",
				scheduler, what, c.Domain)))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: %s does not spread replicas; the preferred spread over %s domains is ignored",
			p.Index(i), scheduler, c.Domain))
	}
	return warnings, errs
}

// RefuseGroveSchedulerShapes is the answer of a backend to the placement shapes only
// grove-scheduler honours — replica spread, slices, role affinity and anti-affinity groups:
// each required one is rejected on its field, each preferred one admitted with a warning.
func RefuseGroveSchedulerShapes(pcs *corev1alpha1.PodCliqueSet, scheduler string) ([]string, field.ErrorList) {
	var warnings []string
	var errs field.ErrorList
	for _, refuse := range []func(*corev1alpha1.PodCliqueSet, string) ([]string, field.ErrorList){RefuseReplicaSpread, RefuseSlices, RefuseRoleAffinity} {
		w, e := refuse(pcs, scheduler)
		warnings, errs = append(warnings, w...), append(errs, e...)
	}
	return warnings, errs
}
