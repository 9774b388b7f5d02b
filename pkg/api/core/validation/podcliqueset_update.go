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
	legacy := hasLegacyTopologyConstraint(oldPCS)
	errs = append(errs, immutable(startupTypeOf(nt), startupTypeOf(ot), templatePath.Child("cliqueStartupType"))...)
	errs = append(errs, immutableTopology(nt.TopologyConstraint, ot.TopologyConstraint, legacy, templatePath.Child("topologyConstraint"))...)
	errs = append(errs, immutable(nt.ResourceClaimTemplates, ot.ResourceClaimTemplates, templatePath.Child("resourceClaimTemplates"))...)
	errs = append(errs, immutable(nt.ResourceSharing, ot.ResourceSharing, templatePath.Child("resourceSharing"))...)
	errs = append(errs, validateCliquesUpdate(nt, ot, legacy)...)
	errs = append(errs, validateScalingGroupsUpdate(nt, ot, legacy)...)
	return warnings, errs
}

// immutableTopology is immutable for a topology constraint, except for the two repairs
// upstream Grove accepts on update, so that an object written by an older Dynamo release can
// be brought to the current API by its owner:
//   - legacy (the old PodCliqueSet has no topologyName anywhere yet a constraint with
//     packDomain, as Dynamo wrote before topologyName existed): a constraint with packDomain
//     and no topologyName may gain a topologyName, its packDomain unchanged;
//   - always: packDomain may move to pack.required (same domain, same topologyName, same
//     preferred domain).
//
// Anything else, including both steps in one update, changes what the running gangs were
// built from and is refused.
func immutableTopology(newTC, oldTC *corev1alpha1.TopologyConstraint, legacy bool, p *field.Path) field.ErrorList {
	if ((legacy && addsTopologyName(oldTC, newTC)) || movesPackDomainToRequired(oldTC, newTC)) && sameReplicaSpread(newTC, oldTC) && sameSlice(newTC, oldTC) && sameRoleAffinity(newTC, oldTC) {
		return nil
	}
	return immutable(newTC, oldTC, p)
}

func addsTopologyName(oldTC, newTC *corev1alpha1.TopologyConstraint) bool {
	return oldTC != nil && newTC != nil && oldTC.TopologyName == "" && oldTC.PackDomain != "" &&
		newTC.TopologyName != "" && newTC.PackDomain == oldTC.PackDomain
}

func movesPackDomainToRequired(oldTC, newTC *corev1alpha1.TopologyConstraint) bool {
	return oldTC != nil && newTC != nil && oldTC.PackDomain != "" && newTC.PackDomain == "" &&
		newTC.Pack != nil && newTC.Pack.Required == oldTC.PackDomain &&
		newTC.TopologyName == oldTC.TopologyName && newTC.PreferredDomain() == oldTC.PreferredDomain()
}

// hasLegacyTopologyConstraint: no constraint of the PodCliqueSet names its ClusterTopology,
// and one has a packDomain (the shape written before topologyName existed).
func hasLegacyTopologyConstraint(pcs *corev1alpha1.PodCliqueSet) bool {
	if EffectiveTopologyName(pcs) != "" {
		return false
	}
	for _, r := range topologyConstraints(pcs) {
		if r.tc.PackDomain != "" {
			return true
		}
	}
	return false
}

// TopologyConstraintsChanged reports whether an update changed any topology constraint (one
// of the repairs above): the new constraints are then checked against their ClusterTopology.
func TopologyConstraintsChanged(newPCS, oldPCS *corev1alpha1.PodCliqueSet) bool {
	n, o := topologyConstraints(newPCS), topologyConstraints(oldPCS)
	if len(n) != len(o) {
		return true
	}
	for i := range n {
		if n[i].path.String() != o[i].path.String() || !apiequality.Semantic.DeepEqual(n[i].tc, o[i].tc) {
			return true
		}
	}
	return false
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

func validateCliquesUpdate(nt, ot *corev1alpha1.PodCliqueSetTemplateSpec, legacy bool) field.ErrorList {
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
		errs = append(errs, immutableTopology(c.TopologyConstraint, o.TopologyConstraint, legacy, p.Child("topologyConstraint"))...)
	}
	for _, c := range ot.Cliques {
		if c != nil && !newNames[c.Name] {
			errs = append(errs, field.Forbidden(cp, fmt.Sprintf("clique %q cannot be removed: the set of cliques is immutable", c.Name)))
		}
	}
	return errs
}

func validateScalingGroupsUpdate(nt, ot *corev1alpha1.PodCliqueSetTemplateSpec, legacy bool) field.ErrorList {
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
		errs = append(errs, immutableTopology(g.TopologyConstraint, o.TopologyConstraint, legacy, p.Child("topologyConstraint"))...)
	}
	for _, g := range ot.PodCliqueScalingGroupConfigs {
		if !newNames[g.Name] {
			errs = append(errs, field.Forbidden(gp, fmt.Sprintf("scaling group %q cannot be removed: the scaling groups are immutable", g.Name)))
		}
	}
	return errs
}
