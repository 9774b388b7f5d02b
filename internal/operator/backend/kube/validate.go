package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Why a topology constraint is rejected for default-scheduler.
const (
	PreferredUnsupportedMessage = "default-scheduler cannot honour a preferred domain: the Kubernetes Workload API only expresses " +
		"required domains (schedulingConstraints.topology); make it required, remove it or use grove-scheduler"
	TopologyUnsupportedMessage = "default-scheduler cannot honour topology constraints here: the apiserver does not serve the " +
		"Kubernetes Workload API's PodGroups (scheduling.k8s.io/v1beta1; feature gate GenericWorkload); remove the constraint or use grove-scheduler"
	TopologyGateOffMessage = "default-scheduler cannot honour topology constraints here: the apiserver drops PodGroup topology " +
		"constraints (feature gate TopologyAwareWorkloadScheduling is off); remove the constraint or use grove-scheduler"
	MultiGroupTopologyUnsupportedMessage = "default-scheduler cannot pack several PodCliques into one domain here: that needs a " +
		"CompositePodGroup (scheduling.k8s.io/v1alpha3; feature gate CompositePodGroup), which the apiserver does not serve; " +
		"set the constraint on the cliques instead (each PodClique is packed on its own), remove it or use grove-scheduler"
)

// ReplicaWideRequiredMessage is why a PodCliqueSet-level required domain with scaled PodGangs is
// rejected; %s is the scaling group.
const ReplicaWideRequiredMessage = "default-scheduler cannot keep a replica's PodGangs in one domain: scaling group %q has " +
	"PodGangs beyond its minAvailable, each its own Workload API gang whose topology constraint applies to it alone, so they " +
	"could land outside the domain the base PodGang took; set the required domain on the scaling group and cliques instead, or use grove-scheduler"

// Warnings of ValidatePodCliqueSet.
const (
	GangNotEnforcedWarning = "default-scheduler places pods one by one here: gang scheduling (minAvailable) is not enforced, " +
		"because the apiserver does not serve the Kubernetes Workload API's PodGroups (scheduling.k8s.io/v1beta1)"
	GangPerPodCliqueWarning = "default-scheduler gang-schedules each PodClique on its own here: the PodCliques of a replica are " +
		"not placed all-or-nothing together, because the apiserver does not serve CompositePodGroups (scheduling.k8s.io/v1alpha3)"
)

// constraintScope is what a topology constraint packs.
type constraintScope int

const (
	// onePodClique packs one PodClique: a PodGroup's own constraint.
	onePodClique constraintScope = iota
	// severalPodCliques packs a PodGang or a scaling-group replica: a CompositePodGroup's.
	severalPodCliques
)

// ValidatePodCliqueSet rejects, naming the field, every constraint default-scheduler cannot
// honour in this cluster: preferred domains always; required domains without the Workload
// API's topology constraints; PodCliqueSet and scaling-group domains without CompositePodGroups.
// It warns when gangs are not (or only per PodClique) enforced.
func (b *Backend) ValidatePodCliqueSet(_ context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	t := &pcs.Spec.Template
	tp := field.NewPath("spec", "template")
	var errs field.ErrorList
	check := func(p *field.Path, tc *corev1alpha1.TopologyConstraint, scope constraintScope) {
		if tc == nil {
			return
		}
		if tc.PreferredDomain() != "" {
			errs = append(errs, field.Forbidden(p.Child("pack", "preferred"), PreferredUnsupportedMessage))
		}
		if tc.RequiredDomain() == "" {
			return
		}
		requiredPath := p.Child("packDomain")
		if tc.Pack != nil && tc.Pack.Required != "" {
			requiredPath = p.Child("pack", "required")
		}
		if why := b.requiredUnsupported(scope); why != "" {
			errs = append(errs, field.Forbidden(requiredPath, why))
		}
	}
	check(tp.Child("topologyConstraint"), t.TopologyConstraint, severalPodCliques)
	for i := range t.PodCliqueScalingGroupConfigs {
		check(tp.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"), t.PodCliqueScalingGroupConfigs[i].TopologyConstraint, severalPodCliques)
	}
	for i, c := range t.Cliques {
		if c != nil {
			check(tp.Child("cliques").Index(i).Child("topologyConstraint"), c.TopologyConstraint, onePodClique)
		}
	}
	// (Where the API cannot pack several PodCliques at all, that is already the reason.)
	if p, group := backend.ReplicaWideRequired(pcs); p != nil && b.requiredUnsupported(severalPodCliques) == "" {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(ReplicaWideRequiredMessage, group)))
	}
	var warnings []string
	switch {
	case !b.api.PodGroups:
		warnings = append(warnings, GangNotEnforcedWarning)
	case !b.api.CompositePodGroups && len(t.Cliques) > 1:
		warnings = append(warnings, GangPerPodCliqueWarning)
	}
	shapeWarnings, shapeErrs := backend.RefuseGroveSchedulerShapes(pcs, "default-scheduler")
	return append(warnings, shapeWarnings...), append(errs, shapeErrs...)
}

// requiredUnsupported says why a required domain of a scope cannot be honoured ("" when it can).
func (b *Backend) requiredUnsupported(scope constraintScope) string {
	switch {
	case !b.api.PodGroups:
		return TopologyUnsupportedMessage
	case b.api.TopologyProbeError != "":
		return "default-scheduler cannot honour topology constraints here: it " + b.api.TopologyProbeError + "; remove the constraint or use grove-scheduler"
	case !b.api.TopologyConstraints:
		return TopologyGateOffMessage
	case scope == severalPodCliques && !b.api.CompositePodGroups:
		return MultiGroupTopologyUnsupportedMessage
	}
	return ""
}
