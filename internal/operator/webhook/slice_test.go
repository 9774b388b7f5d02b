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

// TestSliceAdmission: a clique's topologyConstraint.slice through the real apiserver (schema and
// CEL rules) and webhooks (levels, backends), each refusal on its field.
func TestSliceAdmission(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "slice-" + ns},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "block", Key: "example.com/block"}, {Domain: "rack", Key: "example.com/rack"},
			{Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
	require.NoError(t, e.client.Create(ctx, ct))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })
	const routerSlice = "spec.template.cliques[0].topologyConstraint.slice"
	withSlice := func(pack corev1alpha1.TopologyDomain, sl corev1alpha1.SliceConstraint) func(*corev1alpha1.PodCliqueSet) {
		return func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas = 4
			p.Spec.Template.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: pack, Slice: &sl}
		}
	}
	two := ptr.To[int32](2)
	// Volcano packs the whole PodGang only: the gang's block is the PodCliqueSet's.
	onVolcanoInBlock := func(p *corev1alpha1.PodCliqueSet, sl corev1alpha1.SliceConstraint) {
		onVolcano(p)
		p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = nil
		p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: "block"}
		withSlice("", sl)(p)
	}

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
		detail string
	}{
		{"both maxSize and size", withSlice("block", corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: two, Size: two}),
			[]string{routerSlice}, "set exactly one of maxSize and size"},
		{"size below 1", withSlice("block", corev1alpha1.SliceConstraint{Domain: "rack", Size: ptr.To[int32](0)}),
			[]string{routerSlice + ".size"}, "should be greater than or equal to 1"},
		{"broader than the pack level", withSlice("rack", corev1alpha1.SliceConstraint{Domain: "block", MaxSize: two}),
			[]string{routerSlice + ".domain"}, "must be equal to or narrower than the domain \"rack\""},
		{"not a level of the ClusterTopology", withSlice("block", corev1alpha1.SliceConstraint{Domain: "zone", MaxSize: two}),
			[]string{routerSlice + ".domain"}, "supported values"},
		{"on a scaling group", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name,
				PackDomain: "block", Slice: &corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: two}}
		}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.slice"}, "clique-level topologyConstraint"},
		{"required slice on volcano", func(p *corev1alpha1.PodCliqueSet) {
			onVolcanoInBlock(p, corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: two})
		}, []string{routerSlice + ".whenUnsatisfiable"}, "volcano cannot place each slice of clique \"router\" whole in a rack of its own"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := newPCS(ns, "slice-"+string(rune('a'+i)))
			c.mutate(pcs)
			err := e.client.Create(ctx, pcs)
			requireInvalid(t, err, c.paths...)
			assert.Contains(t, err.Error(), c.detail)
		})
	}

	t.Run("a slice alone on grove-scheduler, defaulted to DoNotSchedule and immutable", func(t *testing.T) {
		pcs := newPCS(ns, "slice-ok")
		withSlice("", corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: two})(pcs)
		e.warnings.Take()
		require.NoError(t, e.client.Create(ctx, pcs))
		assert.Empty(t, e.warnings.Take())
		assert.Equal(t, corev1alpha1.SpreadDoNotSchedule, pcs.Spec.Template.Cliques[0].TopologyConstraint.Slice.WhenUnsatisfiable)

		pcs.Spec.Template.Cliques[0].TopologyConstraint.Slice.MaxSize = ptr.To[int32](4)
		requireInvalid(t, e.client.Update(ctx, pcs), "spec.template.cliques[0].topologyConstraint")
	})

	t.Run("preferred slice on volcano is admitted with a warning", func(t *testing.T) {
		pcs := newPCS(ns, "slice-volcano")
		onVolcanoInBlock(pcs, corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: two, WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway})
		e.warnings.Take()
		require.NoError(t, e.client.Create(ctx, pcs))
		assert.Contains(t, e.warnings.Take(), routerSlice+": volcano does not cut cliques into slices; the preferred slices over rack domains are ignored")
	})
}
