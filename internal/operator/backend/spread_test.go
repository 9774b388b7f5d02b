package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestRefuseReplicaSpread(t *testing.T) {
	pcs := &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
		TopologyConstraint: &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack",
			ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{
				{Domain: "rack", WhenUnsatisfiable: corev1alpha1.SpreadDoNotSchedule},
				{Domain: "zone", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway},
			}}}}}
	warnings, errs := RefuseReplicaSpread(pcs, "volcano")
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.topologyConstraint.replicaSpreadConstraints[0].whenUnsatisfiable", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "volcano cannot keep a PodCliqueSet's replicas in separate rack domains")
	assert.Equal(t, []string{"spec.template.topologyConstraint.replicaSpreadConstraints[1]: volcano does not spread replicas; the preferred spread over zone domains is ignored"}, warnings)

	warnings, errs = RefuseReplicaSpread(&corev1alpha1.PodCliqueSet{}, "volcano")
	assert.Empty(t, warnings)
	assert.Empty(t, errs, "nothing to refuse without a spread")
}

// TestRefuseScalingGroupSpread: a scaling group's spread is refused (required) or warned about
// (preferred) on its own field, like the PodCliqueSet-level one.
func TestRefuseScalingGroupSpread(t *testing.T) {
	pcs := &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
		PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "prefill"},
			{Name: "decode", TopologyConstraint: &corev1alpha1.TopologyConstraint{PackDomain: "rack",
				ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{
					{Domain: "rack"},
					{Domain: "zone", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway},
				}}},
		}}}}
	warnings, errs := RefuseGroveSchedulerShapes(pcs, "kai")
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.podCliqueScalingGroups[1].topologyConstraint.replicaSpreadConstraints[0].whenUnsatisfiable", errs[0].Field)
	assert.Contains(t, errs[0].Detail, `kai cannot keep scaling group "decode"'s replicas in separate rack domains`)
	assert.Equal(t, []string{"spec.template.podCliqueScalingGroups[1].topologyConstraint.replicaSpreadConstraints[1]: kai does not spread replicas; the preferred spread over zone domains is ignored"}, warnings)
}
