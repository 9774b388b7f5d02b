package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestRefuseRoleAffinity(t *testing.T) {
	pcs := &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
		TopologyConstraint: &corev1alpha1.TopologyConstraint{TopologyName: "fabric",
			AffinityGroups: []corev1alpha1.RoleAffinityGroup{
				{Name: "pd", Members: []string{"prefill", "decode"}, Domain: "rack", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway},
			},
			AntiAffinityGroups: []corev1alpha1.RoleAffinityGroup{
				{Name: "apart", Members: []string{"prefill", "decode"}, Domain: "rack", WhenUnsatisfiable: corev1alpha1.SpreadDoNotSchedule},
			}}}}}
	warnings, errs := RefuseRoleAffinity(pcs, "kai-scheduler")
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.topologyConstraint.antiAffinityGroups[0].whenUnsatisfiable", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "kai-scheduler cannot keep roles [prefill decode] apart in separate rack domains")
	assert.Equal(t, []string{`spec.template.topologyConstraint.affinityGroups[0]: kai-scheduler does not place roles relative to each other; the preferred group "pd" is ignored`}, warnings)

	warnings, errs = RefuseRoleAffinity(&corev1alpha1.PodCliqueSet{}, "kai-scheduler")
	assert.Empty(t, warnings)
	assert.Empty(t, errs, "nothing to refuse without role groups")
}
