package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestReplicaWideRequiredNeedsScaledPodGangs(t *testing.T) {
	build := func(tc *corev1alpha1.TopologyConstraint, groups ...corev1alpha1.PodCliqueScalingGroupConfig) *corev1alpha1.PodCliqueSet {
		return &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
			TopologyConstraint: tc, PodCliqueScalingGroupConfigs: groups}}}
	}
	block := &corev1alpha1.TopologyConstraint{PackDomain: "block"}
	packBlock := &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "block"}}
	preferBlock := &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "block"}}
	fixed := corev1alpha1.PodCliqueScalingGroupConfig{Name: "fixed", Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](2)}
	elastic := corev1alpha1.PodCliqueScalingGroupConfig{Name: "elastic", Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)}
	autoscaled := corev1alpha1.PodCliqueScalingGroupConfig{Name: "autoscaled", ScaleConfig: &corev1alpha1.AutoScalingConfig{MaxReplicas: 3}}
	cases := []struct {
		name        string
		pcs         *corev1alpha1.PodCliqueSet
		path, group string
	}{
		{"no scaling group", build(block), "", ""},
		{"every replica in the base PodGang", build(block, fixed), "", ""},
		{"replicas beyond minAvailable", build(block, fixed, elastic), "spec.template.topologyConstraint.packDomain", "elastic"},
		{"an autoscaler may add PodGangs", build(packBlock, autoscaled), "spec.template.topologyConstraint.pack.required", "autoscaled"},
		{"a preference binds nothing", build(preferBlock, elastic), "", ""},
		{"no PodCliqueSet constraint", build(nil, elastic), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, group := ReplicaWideRequired(tc.pcs)
			if tc.path == "" {
				assert.Nil(t, p)
				return
			}
			if assert.NotNil(t, p) {
				assert.Equal(t, tc.path, p.String())
			}
			assert.Equal(t, tc.group, group)
		})
	}
}
