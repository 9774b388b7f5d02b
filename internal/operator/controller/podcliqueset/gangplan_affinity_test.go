package podcliqueset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/internal/operator/packing"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestPlanPodGangsRoleAffinity: a replica's base PodGang carries the role groups with each
// role's PodGroups in it (a scaling group's replicas below minAvailable); scaled PodGangs carry
// none, and a domain the topology lacks drops the group.
func TestPlanPodGangsRoleAffinity(t *testing.T) {
	pcs := testPCS(2)
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric",
		AffinityGroups: []corev1alpha1.RoleAffinityGroup{{Name: "pd", Members: []string{"w", "router"}, Domain: "rack"}},
		AntiAffinityGroups: []corev1alpha1.RoleAffinityGroup{
			{Name: "apart", Members: []string{"router", "w"}, Domain: "host", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway},
			{Name: "elsewhere", Members: []string{"router", "w"}, Domain: "zone"},
		}}
	tr := packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "r"}, {Domain: "host", Key: "h"}})
	assert.Equal(t, []corev1alpha1.TopologyDomain{"zone"}, tr.MissingDomains)
	assert.True(t, packing.HasConstraints(&pcs.Spec.Template), "role groups alone are constraints")
	gangs := planPodGangs(gangPlanInput{pcs: pcs, topology: tr})
	require.Len(t, gangs, 4)
	for _, g := range gangs {
		if g.scalingGroup != "" {
			assert.Empty(t, g.spec.AffinityGroups, g.name)
			assert.Empty(t, g.spec.AntiAffinityGroups, g.name)
			continue
		}
		sg := apicommon.PodCliqueScalingGroupName("p", g.replica, "w")
		w := schedv1alpha1.RoleAffinityMember{Name: "w", PodGroupNames: []string{
			apicommon.ScalingGroupPodCliqueName(sg, 0, "prefill"), apicommon.ScalingGroupPodCliqueName(sg, 0, "decode"),
			apicommon.ScalingGroupPodCliqueName(sg, 1, "prefill"), apicommon.ScalingGroupPodCliqueName(sg, 1, "decode"),
		}}
		router := schedv1alpha1.RoleAffinityMember{Name: "router", PodGroupNames: []string{apicommon.StandalonePodCliqueName("p", g.replica, "router")}}
		assert.Equal(t, []schedv1alpha1.RoleAffinityGroup{{Name: "pd", TopologyKey: "r", Required: true,
			Members: []schedv1alpha1.RoleAffinityMember{w, router}}}, g.spec.AffinityGroups, g.name)
		assert.Equal(t, []schedv1alpha1.RoleAffinityGroup{{Name: "apart", TopologyKey: "h",
			Members: []schedv1alpha1.RoleAffinityMember{router, w}}}, g.spec.AntiAffinityGroups, g.name)
	}
}
