package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestReplicaSpreadAdmission: replicaSpreadConstraints through the real apiserver (schema and
// CEL rules) and webhooks (levels, backends), each refusal on its field.
func TestReplicaSpreadAdmission(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "spread-" + ns},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "zone", Key: "topology.kubernetes.io/zone"}, {Domain: "rack", Key: "example.com/rack"},
			{Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
	require.NoError(t, e.client.Create(ctx, ct))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })
	withSpread := func(pack corev1alpha1.TopologyDomain, spreads ...corev1alpha1.ReplicaSpreadConstraint) func(*corev1alpha1.PodCliqueSet) {
		return func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: pack, ReplicaSpreadConstraints: spreads}
		}
	}
	preferZone := corev1alpha1.ReplicaSpreadConstraint{Domain: "zone", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway, MaxSkew: ptr.To[int32](1)}

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
		detail string
	}{
		{"narrower than the pack level", withSpread("rack", corev1alpha1.ReplicaSpreadConstraint{Domain: "host"}),
			[]string{"spec.template.topologyConstraint.replicaSpreadConstraints[0].domain"}, "must be equal to or broader than"},
		{"not a level of the ClusterTopology", withSpread("rack", corev1alpha1.ReplicaSpreadConstraint{Domain: "block"}),
			[]string{"spec.template.topologyConstraint.replicaSpreadConstraints[0].domain"}, "supported values"},
		{"maxSkew on a required spread", withSpread("rack", corev1alpha1.ReplicaSpreadConstraint{Domain: "rack", MaxSkew: ptr.To[int32](2)}),
			[]string{"spec.template.topologyConstraint.replicaSpreadConstraints[0].maxSkew"}, "maxSkew applies to ScheduleAnyway only"},
		{"required spread on volcano", func(p *corev1alpha1.PodCliqueSet) {
			withSpread("rack", corev1alpha1.ReplicaSpreadConstraint{Domain: "rack"})(onVolcano(p))
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = nil
		}, []string{"spec.template.topologyConstraint.replicaSpreadConstraints[0].whenUnsatisfiable"}, "volcano cannot keep a PodCliqueSet's replicas in separate rack domains"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := newPCS(ns, "spread-"+string(rune('a'+i)))
			c.mutate(pcs)
			err := e.client.Create(ctx, pcs)
			requireInvalid(t, err, c.paths...)
			assert.Contains(t, err.Error(), c.detail)
		})
	}

	t.Run("required over racks and preferred over zones on grove-scheduler; defaulted to DoNotSchedule", func(t *testing.T) {
		pcs := newPCS(ns, "spread-ok")
		withSpread("rack", corev1alpha1.ReplicaSpreadConstraint{Domain: "rack"}, preferZone)(pcs)
		e.warnings.Take()
		require.NoError(t, e.client.Create(ctx, pcs))
		assert.Empty(t, e.warnings.Take())
		assert.Equal(t, corev1alpha1.SpreadDoNotSchedule, pcs.Spec.Template.TopologyConstraint.ReplicaSpreadConstraints[0].WhenUnsatisfiable)

		pcs.Spec.Template.TopologyConstraint.ReplicaSpreadConstraints = pcs.Spec.Template.TopologyConstraint.ReplicaSpreadConstraints[:1]
		requireInvalid(t, e.client.Update(ctx, pcs), "spec.template.topologyConstraint")
	})

	t.Run("preferred spread on volcano is admitted with a warning", func(t *testing.T) {
		pcs := onVolcano(newPCS(ns, "spread-volcano"))
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = nil
		withSpread("rack", preferZone)(pcs)
		e.warnings.Take()
		require.NoError(t, e.client.Create(ctx, pcs))
		warnings := e.warnings.Take()
		assert.Contains(t, warnings, "spec.template.topologyConstraint.replicaSpreadConstraints[0]: volcano does not spread replicas; the preferred spread over zone domains is ignored")
	})
}
