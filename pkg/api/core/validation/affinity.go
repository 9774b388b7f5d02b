package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// roleGroupKinds are the two lists of role groups with what their members do, for messages.
var roleGroupKinds = []struct {
	field string
	list  func(*corev1alpha1.TopologyConstraint) []corev1alpha1.RoleAffinityGroup
	anti  bool
}{
	{"affinityGroups", func(tc *corev1alpha1.TopologyConstraint) []corev1alpha1.RoleAffinityGroup { return tc.AffinityGroups }, false},
	{"antiAffinityGroups", func(tc *corev1alpha1.TopologyConstraint) []corev1alpha1.RoleAffinityGroup {
		return tc.AntiAffinityGroups
	}, true},
}

// validateRoleAffinity checks the affinityGroups and antiAffinityGroups of a PodCliqueSet:
// they sit on the PodCliqueSet-level constraint only (they relate roles of one replica); each
// member is a standalone clique or a scaling group of the template (a clique inside a scaling
// group is placed with its group replica, so the group is the member), listed once and in at
// most one group of a kind; the domain is a level of the ClusterTopology and not narrower than
// any member's required pack domain (its pods could not share a narrower one); an
// anti-affinity domain is narrower than the PodCliqueSet's required pack domain (all pods
// share that one, so members cannot be apart in it). A required group whose scaling-group
// member can have scaled PodGangs is refused: those PodGangs are not covered (see
// RoleAffinityGroup), so the scheduler could not keep the promise; a preferred one is
// accepted with a warning.
func validateRoleAffinity(pcs *corev1alpha1.PodCliqueSet, refs []*constraintRef, ct *corev1alpha1.ClusterTopology, domains []string) ([]string, field.ErrorList) {
	var warnings []string
	var errs field.ErrorList
	t := &pcs.Spec.Template
	for _, r := range refs {
		for _, kind := range roleGroupKinds {
			groups := kind.list(r.tc)
			if len(groups) == 0 {
				continue
			}
			lp := r.path.Child(kind.field)
			if r.what != rootWhat {
				errs = append(errs, field.Forbidden(lp, "roles are kept together or apart by the PodCliqueSet-level topologyConstraint only (spec.template.topologyConstraint)"))
				continue
			}
			names, memberOf := map[string]bool{}, map[string]string{}
			for i := range groups {
				g := &groups[i]
				gp := lp.Index(i)
				if names[g.Name] {
					errs = append(errs, field.Duplicate(gp.Child("name"), g.Name))
				}
				names[g.Name] = true
				if len(g.Members) < 2 {
					errs = append(errs, field.Required(gp.Child("members"), "a group relates at least two roles"))
				}
				seen := map[string]bool{}
				for j, m := range g.Members {
					mp := gp.Child("members").Index(j)
					switch {
					case seen[m]:
						errs = append(errs, field.Duplicate(mp, m))
						continue
					case memberOf[m] != "":
						errs = append(errs, field.Invalid(mp, m, fmt.Sprintf("already a member of %s %q; a role is in at most one group of a kind", kind.field, memberOf[m])))
					}
					seen[m] = true
					if memberOf[m] == "" {
						memberOf[m] = g.Name
					}
					errs = append(errs, validateRoleMember(t, m, mp, g, &warnings)...)
				}
				errs = append(errs, validateRoleDomain(t, r, ct, domains, g, gp.Child("domain"), kind.anti)...)
			}
		}
	}
	return warnings, errs
}

// validateRoleMember checks that m names a standalone clique or a scaling group, and that a
// required group's scaling group has no scaled PodGangs.
func validateRoleMember(t *corev1alpha1.PodCliqueSetTemplateSpec, m string, mp *field.Path, g *corev1alpha1.RoleAffinityGroup, warnings *[]string) field.ErrorList {
	if sg := scalingGroupNamed(t, m); sg != nil {
		most := corev1alpha1.ScalingGroupReplicas(sg)
		if sg.ScaleConfig != nil {
			most = max(most, sg.ScaleConfig.MaxReplicas)
		}
		if minAvailable := corev1alpha1.ScalingGroupMinAvailable(sg); most > minAvailable {
			msg := fmt.Sprintf("scaling group %q can have %d replicas but minAvailable %d: its replicas beyond minAvailable run in scaled PodGangs, which the group does not cover",
				m, most, minAvailable)
			if g.Required() {
				return field.ErrorList{field.Invalid(mp, m, msg+"; set minAvailable to its replicas (and the autoscaler's maxReplicas) or use whenUnsatisfiable: ScheduleAnyway")}
			}
			*warnings = append(*warnings, fmt.Sprintf("%s: %s", mp, msg))
		}
		return nil
	}
	if t.Clique(m) == nil {
		return field.ErrorList{field.NotFound(mp, m)}
	}
	if sg := t.ScalingGroupOf(m); sg != nil {
		return field.ErrorList{field.Invalid(mp, m, fmt.Sprintf("clique %q belongs to scaling group %q, which is placed as a whole: name the scaling group", m, sg.Name))}
	}
	return nil
}

func scalingGroupNamed(t *corev1alpha1.PodCliqueSetTemplateSpec, name string) *corev1alpha1.PodCliqueScalingGroupConfig {
	for i := range t.PodCliqueScalingGroupConfigs {
		if t.PodCliqueScalingGroupConfigs[i].Name == name {
			return &t.PodCliqueScalingGroupConfigs[i]
		}
	}
	return nil
}

// validateRoleDomain checks a group's domain against the topology and its members' domains.
func validateRoleDomain(t *corev1alpha1.PodCliqueSetTemplateSpec, root *constraintRef, ct *corev1alpha1.ClusterTopology,
	domains []string, g *corev1alpha1.RoleAffinityGroup, dp *field.Path, anti bool) field.ErrorList {
	level := ct.Spec.LevelIndex(g.Domain)
	if level < 0 {
		return field.ErrorList{field.NotSupported(dp, g.Domain, domains)}
	}
	if anti {
		if pack := root.tc.RequiredDomain(); pack != "" && ct.Spec.LevelIndex(pack) >= level {
			return field.ErrorList{field.Invalid(dp, g.Domain, fmt.Sprintf(
				"must be narrower than the domain %q every pod of a replica shares (%s): members cannot be apart within one %s", pack, root.requiredPath(), pack))}
		}
	}
	for _, m := range g.Members {
		for _, own := range memberRequiredDomains(t, m) {
			if l := ct.Spec.LevelIndex(own); l >= 0 && level > l {
				return field.ErrorList{field.Invalid(dp, g.Domain, fmt.Sprintf(
					"must be equal to or broader than the domain %q member %q is packed into in ClusterTopology %q", own, m, ct.Name))}
			}
		}
	}
	return nil
}

// memberRequiredDomains are the required pack domains of a role: a clique's own, or a scaling
// group's and its cliques'.
func memberRequiredDomains(t *corev1alpha1.PodCliqueSetTemplateSpec, m string) []corev1alpha1.TopologyDomain {
	var out []corev1alpha1.TopologyDomain
	add := func(tc *corev1alpha1.TopologyConstraint) {
		if d := tc.RequiredDomain(); d != "" {
			out = append(out, d)
		}
	}
	if sg := scalingGroupNamed(t, m); sg != nil {
		add(sg.TopologyConstraint)
		for _, c := range sg.CliqueNames {
			if cl := t.Clique(c); cl != nil {
				add(cl.TopologyConstraint)
			}
		}
		return out
	}
	if c := t.Clique(m); c != nil {
		add(c.TopologyConstraint)
	}
	return out
}

// sameRoleAffinity: the repairs of an update (immutableTopology) never change the role groups.
func sameRoleAffinity(a, b *corev1alpha1.TopologyConstraint) bool {
	groups := func(tc *corev1alpha1.TopologyConstraint) [2][]corev1alpha1.RoleAffinityGroup {
		if tc == nil {
			return [2][]corev1alpha1.RoleAffinityGroup{}
		}
		return [2][]corev1alpha1.RoleAffinityGroup{tc.AffinityGroups, tc.AntiAffinityGroups}
	}
	return apiequality.Semantic.DeepEqual(groups(a), groups(b))
}
