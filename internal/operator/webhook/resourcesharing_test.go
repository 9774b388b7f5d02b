package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestResourceSharingIsImmutable: through the apiserver, a PodCliqueSet sharing resources at
// every level keeps its templates and every resourceSharing list; other changes go through.
func TestResourceSharingIsImmutable(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	all, per := corev1alpha1.ResourceSharingScopeAllReplicas, corev1alpha1.ResourceSharingScopePerReplica
	spec := resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}
	base := newPCS(ns, "sharing")
	bt := &base.Spec.Template
	bt.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{{Name: "gpu", TemplateSpec: spec}}
	bt.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{
		ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: all},
		Filter:              &corev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"workers"}},
	}}
	bt.PodCliqueScalingGroupConfigs[0].ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{{
		ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: per},
		Filter:              &corev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"decode"}},
	}}
	bt.Cliques[0].ResourceSharing = []corev1alpha1.ResourceSharingSpec{{Name: "shared-gpu", Namespace: "shared", Scope: per}}
	require.NoError(t, e.client.Create(ctx, base))

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		path   string
	}{
		{"template spec", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates[0].TemplateSpec.Spec.Devices.Requests[0].Name = "gpus"
		}, "spec.template.resourceClaimTemplates"},
		{"PodCliqueSet scope", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Scope = per
		}, "spec.template.resourceSharing"},
		{"PodCliqueSet filter", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Filter = nil
		}, "spec.template.resourceSharing"},
		{"scaling-group filter", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing[0].Filter.ChildCliqueNames = []string{"prefill"}
		}, "spec.template.podCliqueScalingGroups[0].resourceSharing"},
		{"clique entry removed", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing = nil
		}, "spec.template.cliques[0].resourceSharing"},
		{"clique namespace", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing[0].Namespace = "elsewhere"
		}, "spec.template.cliques[0].resourceSharing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := &corev1alpha1.PodCliqueSet{}
			require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(base), pcs))
			tc.mutate(pcs)
			err := e.client.Update(ctx, pcs)
			requireInvalid(t, err, tc.path)
			assert.Contains(t, err.Error(), "field is immutable")
		})
	}
	t.Run("other fields change", func(t *testing.T) {
		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(base), pcs))
		pcs.Spec.Replicas = 2
		require.NoError(t, e.client.Update(ctx, pcs))
	})
}
