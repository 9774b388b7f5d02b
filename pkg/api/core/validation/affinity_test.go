package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func roleGroup(name string, domain corev1alpha1.TopologyDomain, members ...string) corev1alpha1.RoleAffinityGroup {
	return corev1alpha1.RoleAffinityGroup{Name: name, Domain: domain, Members: members, WhenUnsatisfiable: corev1alpha1.SpreadDoNotSchedule}
}

func preferredRoleGroup(name string, domain corev1alpha1.TopologyDomain, members ...string) corev1alpha1.RoleAffinityGroup {
	g := roleGroup(name, domain, members...)
	g.WhenUnsatisfiable = corev1alpha1.SpreadScheduleAnyway
	return g
}

// rolePCS has standalone cliques router and prefill2 and the scaling group workers (prefill,
// decode), whose replicas all sit in the base PodGang.
func rolePCS() *corev1alpha1.PodCliqueSet {
	pcs := validPCS()
	extra := pcs.Spec.Template.Cliques[0].DeepCopy()
	extra.Name, extra.Spec.RoleName = "prefill2", "prefill2"
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, extra)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](3)
	return pcs
}

func TestValidateRoleAffinity(t *testing.T) {
	gpu := clusterTopology("gpu", "zone", "block", "rack", "host")
	const (
		aff  = "spec.template.topologyConstraint.affinityGroups"
		anti = "spec.template.topologyConstraint.antiAffinityGroups"
	)
	cases := []struct {
		name         string
		pcs          *corev1alpha1.TopologyConstraint
		affinity     []corev1alpha1.RoleAffinityGroup
		antiAffinity []corev1alpha1.RoleAffinityGroup
		mutate       func(*corev1alpha1.PodCliqueSet)
		want         []fieldErr
		warns        int
	}{
		{name: "clique and scaling group together in a rack", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router", "workers")}},
		{name: "apart in racks within a block", pcs: named("gpu", pack("block", "")),
			antiAffinity: []corev1alpha1.RoleAffinityGroup{roleGroup("apart", "rack", "router", "prefill2")}},
		{name: "a role may be in one group of each kind", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity:     []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router", "workers")},
			antiAffinity: []corev1alpha1.RoleAffinityGroup{roleGroup("apart", "host", "router", "prefill2")}},
		{name: "unknown member", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router", "nope")},
			want:     []fieldErr{"NotFound " + aff + "[0].members[1]"}},
		{name: "a clique of a scaling group is not a member", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router", "decode")},
			want:     []fieldErr{"Invalid " + aff + "[0].members[1]"}},
		{name: "member listed twice", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router", "workers", "router")},
			want:     []fieldErr{"Duplicate " + aff + "[0].members[2]"}},
		{name: "one member", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router")},
			want:     []fieldErr{"Required " + aff + "[0].members"}},
		{name: "member in two groups of a kind", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			antiAffinity: []corev1alpha1.RoleAffinityGroup{roleGroup("a", "rack", "router", "prefill2"), roleGroup("b", "rack", "workers", "router")},
			want:         []fieldErr{"Invalid " + anti + "[1].members[1]"}},
		{name: "group name twice", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("a", "rack", "router", "prefill2"), roleGroup("a", "rack", "workers", "router")},
			want:     []fieldErr{"Duplicate " + aff + "[1].name", "Invalid " + aff + "[1].members[1]"}},
		{name: "unknown level", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "region", "router", "workers")},
			want:     []fieldErr{"NotSupported " + aff + "[0].domain"}},
		{name: "narrower than a member's pack domain", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			mutate: func(p *corev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("rack", "")
			},
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "host", "router", "workers")},
			want:     []fieldErr{"Invalid " + aff + "[0].domain"}},
		{name: "narrower than a member clique's own pack domain", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			mutate:       func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].TopologyConstraint = pack("block", "") },
			antiAffinity: []corev1alpha1.RoleAffinityGroup{roleGroup("apart", "rack", "router", "workers")},
			want:         []fieldErr{"Invalid " + anti + "[0].domain"}},
		{name: "apart at the level every pod of a replica shares", pcs: named("gpu", pack("rack", "")),
			antiAffinity: []corev1alpha1.RoleAffinityGroup{roleGroup("apart", "rack", "router", "prefill2")},
			want:         []fieldErr{"Invalid " + anti + "[0].domain"}},
		{name: "required with a scaling group that has scaled PodGangs", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			mutate: func(p *corev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](1)
			},
			affinity: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "router", "workers")},
			want:     []fieldErr{"Invalid " + aff + "[0].members[1]"}},
		{name: "required with a scaling group the autoscaler can grow", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			mutate: func(p *corev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &corev1alpha1.AutoScalingConfig{MaxReplicas: 5}
			},
			antiAffinity: []corev1alpha1.RoleAffinityGroup{roleGroup("apart", "rack", "router", "workers")},
			want:         []fieldErr{"Invalid " + anti + "[0].members[1]"}},
		{name: "preferred with a scaling group that has scaled PodGangs warns", pcs: named("gpu", &corev1alpha1.TopologyConstraint{}),
			mutate: func(p *corev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](1)
			},
			affinity: []corev1alpha1.RoleAffinityGroup{preferredRoleGroup("pd", "rack", "router", "workers")}, warns: 1},
		{name: "a scaling group's groups are not supported", pcs: named("gpu", pack("zone", "")),
			mutate: func(p *corev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack",
					AffinityGroups: []corev1alpha1.RoleAffinityGroup{roleGroup("pd", "rack", "prefill", "decode")}}
			},
			want: []fieldErr{"Forbidden spec.template.podCliqueScalingGroups[0].topologyConstraint.affinityGroups"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := rolePCS()
			pcs.Spec.Template.TopologyConstraint = tc.pcs
			tc.pcs.AffinityGroups, tc.pcs.AntiAffinityGroups = tc.affinity, tc.antiAffinity
			if tc.mutate != nil {
				tc.mutate(pcs)
			}
			warnings, errs := ValidateTopologyConstraints(pcs, true, lookupOf(gpu))
			requireExactly(t, errs, tc.want...)
			require.Len(t, warnings, tc.warns, "warnings: %v", warnings)
		})
	}
}

// TestRoleAffinityIsImmutable: a repair of an update (packDomain moved to pack.required) does
// not carry a change of the role groups with it.
func TestRoleAffinityIsImmutable(t *testing.T) {
	oldPCS := rolePCS()
	oldPCS.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "gpu", PackDomain: "block",
		AntiAffinityGroups: []corev1alpha1.RoleAffinityGroup{roleGroup("apart", "rack", "router", "prefill2")}}
	repaired := oldPCS.DeepCopy()
	repaired.Spec.Template.TopologyConstraint.PackDomain = ""
	repaired.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "block"}
	_, errs := ValidatePodCliqueSetUpdate(repaired, oldPCS)
	assert.Empty(t, errs, "the repair alone is allowed")

	changed := repaired.DeepCopy()
	changed.Spec.Template.TopologyConstraint.AntiAffinityGroups[0].Domain = "host"
	_, errs = ValidatePodCliqueSetUpdate(changed, oldPCS)
	requireExactly(t, errs, "Invalid spec.template.topologyConstraint")
}
