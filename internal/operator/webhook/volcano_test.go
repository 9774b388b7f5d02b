package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func onVolcano(p *corev1alpha1.PodCliqueSet) *corev1alpha1.PodCliqueSet {
	for _, c := range p.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "volcano"
	}
	// As NVIDIA Dynamo writes it for its Volcano integration.
	p.Annotations = map[string]string{"scheduling.grove.io/volcano-queue": "dynamo"}
	return p
}

// A PodCliqueSet for Volcano is admitted through the real webhooks; what Volcano cannot pack
// and a scheduler Grove has no backend for are refused on the field that asks for them.
func TestVolcanoAdmission(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "volcano-" + ns},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "block", Key: "example.com/block"}, {Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
	require.NoError(t, e.client.Create(ctx, ct))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })

	t.Run("admitted with Dynamo's queue annotation and a required rack", func(t *testing.T) {
		pcs := onVolcano(newPCS(ns, "volcano-ok"))
		pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: "rack"}
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = nil // no scaled PodGangs
		e.warnings.Take()
		require.NoError(t, e.client.Create(ctx, pcs))
		// This apiserver serves no Volcano API: the queue cannot be checked, which is a warning.
		warnings := e.warnings.Take()
		require.Len(t, warnings, 1, "warnings: %v", warnings)
		assert.Contains(t, warnings[0], "no Volcano Queue API")
	})

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
		detail string
	}{
		{"lpx-scheduler", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.SchedulerName = "lpx-scheduler"
		}, []string{"spec.template.cliques[1].spec.podSpec.schedulerName"},
			`scheduler "lpx-scheduler" is not supported: a proprietary scheduler`},
		{"required host has no HyperNode tier", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, Pack: &corev1alpha1.TopologyPackConstraint{Required: "host"}}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = nil
		}, []string{"spec.template.topologyConstraint.pack.required"}, "no HyperNode tier"},
		{"clique narrower than the PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: "block"}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = nil
			p.Spec.Template.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack"}
		}, []string{"spec.template.cliques[0].topologyConstraint.packDomain"}, "one networkTopology for the whole PodGang"},
		{"required domain across scaled PodGangs", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: "block"}
		}, []string{"spec.template.topologyConstraint.packDomain"}, "cannot keep a replica's PodGangs in one domain"},
		{"cliques in different queues", func(p *corev1alpha1.PodCliqueSet) {
			p.Annotations = nil
			p.Spec.Template.Cliques[0].Annotations = map[string]string{"scheduling.grove.io/volcano-queue": "a"}
			p.Spec.Template.Cliques[2].Annotations = map[string]string{"scheduling.grove.io/volcano-queue": "b"}
		}, []string{"spec.template.cliques[2].annotations[scheduling.grove.io/volcano-queue]"}, "different Volcano queues"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := onVolcano(newPCS(ns, "volcano-"+string(rune('a'+i))))
			tc.mutate(pcs)
			err := e.client.Create(ctx, pcs)
			requireInvalid(t, err, tc.paths...)
			assert.Contains(t, err.Error(), tc.detail)
		})
	}
}
