package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// ValidatePodCliqueSetUpdate checks an updated PodCliqueSet: the new object on its own
// (ValidatePodCliqueSet) and that nothing immutable changed. Immutable are what the running
// gangs are built from: the set of cliques (and their order with an ordered startup type),
// each clique's roleName, minAvailable, startsAfter, schedulerName, resourceSharing and
// topologyConstraint; the startup type; the scaling groups, their members, minAvailable,
// resourceSharing and topologyConstraint; resourceClaimTemplates, resourceSharing and the
// topologyConstraint of the PodCliqueSet.
func ValidatePodCliqueSetUpdate(newPCS, oldPCS *corev1alpha1.PodCliqueSet) (warnings []string, errs field.ErrorList) {
	warnings, errs = ValidatePodCliqueSet(newPCS)
	nt, ot := &newPCS.Spec.Template, &oldPCS.Spec.Template
	errs = append(errs, immutable(startupTypeOf(nt), startupTypeOf(ot), templatePath.Child("cliqueStartupType"))...)
	errs = append(errs, immutable(nt.TopologyConstraint, ot.TopologyConstraint, templatePath.Child("topologyConstraint"))...)
	errs = append(errs, immutable(nt.ResourceClaimTemplates, ot.ResourceClaimTemplates, templatePath.Child("resourceClaimTemplates"))...)
	errs = append(errs, immutable(nt.ResourceSharing, ot.ResourceSharing, templatePath.Child("resourceSharing"))...)
	errs = append(errs, validateCliquesUpdate(nt, ot)...)
	errs = append(errs, validateScalingGroupsUpdate(nt, ot)...)
	return warnings, errs
}

// immutable compares semantically, so nil and empty lists are the same.
func immutable(newVal, oldVal any, p *field.Path) field.ErrorList {
	if apiequality.Semantic.DeepEqual(newVal, oldVal) {
		return nil
	}
	return apivalidation.ValidateImmutableField(newVal, oldVal, p)
}

func startupTypeOf(t *corev1alpha1.PodCliqueSetTemplateSpec) corev1alpha1.CliqueStartupType {
	if t.StartupType == nil {
		return corev1alpha1.CliqueStartupTypeAnyOrder
	}
	return *t.StartupType
}

func validateCliquesUpdate(nt, ot *corev1alpha1.PodCliqueSetTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	cp := templatePath.Child("cliques")
	oldIndex := map[string]int{}
	for i, c := range ot.Cliques {
		if c != nil {
			oldIndex[c.Name] = i
		}
	}
	ordered := startupTypeOf(nt) != corev1alpha1.CliqueStartupTypeAnyOrder
	newNames := map[string]bool{}
	for i, c := range nt.Cliques {
		if c == nil {
			continue
		}
		newNames[c.Name] = true
		p := cp.Index(i)
		oi, ok := oldIndex[c.Name]
		if !ok {
			errs = append(errs, field.Forbidden(p.Child("name"), fmt.Sprintf("clique %q cannot be added: the set of cliques is immutable", c.Name)))
			continue
		}
		if ordered && oi != i {
			errs = append(errs, field.Forbidden(p.Child("name"), fmt.Sprintf("clique %q moved from index %d: the order of cliques is immutable with cliqueStartupType %s",
				c.Name, oi, startupTypeOf(nt))))
		}
		o := ot.Cliques[oi]
		sp := p.Child("spec")
		errs = append(errs, immutable(c.Spec.RoleName, o.Spec.RoleName, sp.Child("roleName"))...)
		errs = append(errs, immutable(corev1alpha1.MinAvailableOf(&c.Spec), corev1alpha1.MinAvailableOf(&o.Spec), sp.Child("minAvailable"))...)
		errs = append(errs, immutable(c.Spec.StartsAfter, o.Spec.StartsAfter, sp.Child("startsAfter"))...)
		errs = append(errs, immutable(c.Spec.PodSpec.SchedulerName, o.Spec.PodSpec.SchedulerName, sp.Child("podSpec", "schedulerName"))...)
		errs = append(errs, immutable(c.ResourceSharing, o.ResourceSharing, p.Child("resourceSharing"))...)
		errs = append(errs, immutable(c.TopologyConstraint, o.TopologyConstraint, p.Child("topologyConstraint"))...)
	}
	for _, c := range ot.Cliques {
		if c != nil && !newNames[c.Name] {
			errs = append(errs, field.Forbidden(cp, fmt.Sprintf("clique %q cannot be removed: the set of cliques is immutable", c.Name)))
		}
	}
	return errs
}

func validateScalingGroupsUpdate(nt, ot *corev1alpha1.PodCliqueSetTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	gp := templatePath.Child("podCliqueScalingGroups")
	old := map[string]*corev1alpha1.PodCliqueScalingGroupConfig{}
	for i := range ot.PodCliqueScalingGroupConfigs {
		old[ot.PodCliqueScalingGroupConfigs[i].Name] = &ot.PodCliqueScalingGroupConfigs[i]
	}
	newNames := map[string]bool{}
	for i := range nt.PodCliqueScalingGroupConfigs {
		g := &nt.PodCliqueScalingGroupConfigs[i]
		newNames[g.Name] = true
		p := gp.Index(i)
		o, ok := old[g.Name]
		if !ok {
			errs = append(errs, field.Forbidden(p.Child("name"), fmt.Sprintf("scaling group %q cannot be added: the scaling groups are immutable", g.Name)))
			continue
		}
		errs = append(errs, immutable(g.CliqueNames, o.CliqueNames, p.Child("cliqueNames"))...)
		errs = append(errs, immutable(corev1alpha1.ScalingGroupMinAvailable(g), corev1alpha1.ScalingGroupMinAvailable(o), p.Child("minAvailable"))...)
		errs = append(errs, immutable(g.ResourceSharing, o.ResourceSharing, p.Child("resourceSharing"))...)
		errs = append(errs, immutable(g.TopologyConstraint, o.TopologyConstraint, p.Child("topologyConstraint"))...)
	}
	for _, g := range ot.PodCliqueScalingGroupConfigs {
		if !newNames[g.Name] {
			errs = append(errs, field.Forbidden(gp, fmt.Sprintf("scaling group %q cannot be removed: the scaling groups are immutable", g.Name)))
		}
	}
	return errs
}
