package packing

import (
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// RoleGroup is one affinity or anti-affinity group of a PodCliqueSet with its domain resolved
// to a node-label key.
type RoleGroup struct {
	Name     string
	Members  []string
	Key      string
	Required bool
	Anti     bool
}

// hasRoleGroups reports whether the constraint keeps roles together or apart.
func hasRoleGroups(tc *corev1alpha1.TopologyConstraint) bool {
	return tc != nil && len(tc.AffinityGroups)+len(tc.AntiAffinityGroups) > 0
}

// translateRoles resolves the PodCliqueSet-level affinityGroups and antiAffinityGroups; a
// domain the ClusterTopology lacks is recorded in missing and dropped.
func translateRoles(tc *corev1alpha1.TopologyConstraint, keys map[corev1alpha1.TopologyDomain]string,
	missing map[corev1alpha1.TopologyDomain]bool) []RoleGroup {
	if tc == nil {
		return nil
	}
	var out []RoleGroup
	for _, kind := range []struct {
		groups []corev1alpha1.RoleAffinityGroup
		anti   bool
	}{{tc.AffinityGroups, false}, {tc.AntiAffinityGroups, true}} {
		for i := range kind.groups {
			g := &kind.groups[i]
			key, ok := keys[g.Domain]
			if !ok {
				missing[g.Domain] = true
				continue
			}
			out = append(out, RoleGroup{Name: g.Name, Members: g.Members, Key: key, Required: g.Required(), Anti: kind.anti})
		}
	}
	return out
}

// RoleAffinity is what a replica's base PodGang carries for the PodCliqueSet's role groups:
// podGroups gives the PodGroups of a role (a standalone clique or a scaling group) in that
// PodGang. Roles without PodGroups there are left out, and so is a group left with fewer than
// two members.
func (t Translated) RoleAffinity(podGroups map[string][]string) (affinity, anti []schedv1alpha1.RoleAffinityGroup) {
	for _, r := range t.Roles {
		g := schedv1alpha1.RoleAffinityGroup{Name: r.Name, TopologyKey: r.Key, Required: r.Required}
		for _, m := range r.Members {
			if names := podGroups[m]; len(names) > 0 {
				g.Members = append(g.Members, schedv1alpha1.RoleAffinityMember{Name: m, PodGroupNames: append([]string(nil), names...)})
			}
		}
		if len(g.Members) < 2 {
			continue
		}
		if r.Anti {
			anti = append(anti, g)
		} else {
			affinity = append(affinity, g)
		}
	}
	return affinity, anti
}
