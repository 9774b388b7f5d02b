package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// An object admitted under older rules (here: one the current rules reject) must still get
// its finalizers changed and be deleted; a change to its spec is validated.
func TestMetadataOnlyUpdatesAndDeletionsAreNotBlocked(t *testing.T) {
	ctx := context.Background()
	registry, err := webhooktest.Registry(ctx, nil)
	require.NoError(t, err)

	v := &webhook.PodCliqueSetValidator{Reader: topologies{}, Backends: registry, TopologyAwareScheduling: true}
	legacy := newPCS("ns", "legacy")
	corev1alpha1.SetDefaultsPodCliqueSet(legacy)
	legacy.Spec.Template.Cliques[1].Spec.RoleName = "router" // duplicate role: rejected today
	_, err = v.ValidateCreate(ctx, legacy.DeepCopy())
	require.Error(t, err, "precondition: the current rules reject the object")

	finalized := legacy.DeepCopy()
	finalized.Finalizers = []string{"grove.io/podcliqueset.grove.io"}
	_, err = v.ValidateUpdate(ctx, legacy, finalized)
	assert.NoError(t, err)

	deleting := finalized.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = nil
	deleting.Spec.Replicas = 0
	_, err = v.ValidateUpdate(ctx, finalized, deleting)
	assert.NoError(t, err)

	scaled := finalized.DeepCopy()
	scaled.Spec.Replicas = 3
	_, err = v.ValidateUpdate(ctx, finalized, scaled)
	assert.Error(t, err, "a spec change is validated")

	ctv := &webhook.ClusterTopologyValidator{Backends: registry}
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "ct"}, Spec: corev1alpha1.ClusterTopologySpec{
		Levels:              []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "r"}},
		SchedulerReferences: []corev1alpha1.SchedulerReference{{SchedulerName: "grove-scheduler", Reference: "x"}},
	}}
	_, err = ctv.ValidateCreate(ctx, ct)
	require.Error(t, err, "precondition: grove-scheduler is not topology-aware")
	withFinalizer := ct.DeepCopy()
	withFinalizer.Finalizers = []string{"grove.io/clustertopology"}
	_, err = ctv.ValidateUpdate(ctx, ct, withFinalizer)
	assert.NoError(t, err)
}

// TestLegacyTopologyRepairsAreAdmitted: an object an older Dynamo release wrote (packDomain,
// no topologyName) may be repaired by its owner exactly as upstream Grove allows: a
// topologyName added with packDomain kept, then packDomain moved to pack.required. Other
// changes of a constraint, both steps at once, and repairs naming a domain the topology lacks
// are refused with the field path.
func TestLegacyTopologyRepairsAreAdmitted(t *testing.T) {
	ctx := context.Background()
	registry, err := webhooktest.Registry(ctx, nil)
	require.NoError(t, err)
	v := &webhook.PodCliqueSetValidator{Reader: topologies{}, Backends: registry, TopologyAwareScheduling: true}

	withConstraints := func(pcsTC, groupTC *corev1alpha1.TopologyConstraint) *corev1alpha1.PodCliqueSet {
		p := newPCS("ns", "legacy")
		p.Spec.Template.TopologyConstraint = pcsTC
		p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = groupTC
		corev1alpha1.SetDefaultsPodCliqueSet(p)
		return p
	}
	legacyTC := func(d corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{PackDomain: d}
	}
	named := func(name string, d corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{TopologyName: name, PackDomain: d}
	}
	required := func(name string, d corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{TopologyName: name, Pack: &corev1alpha1.TopologyPackConstraint{Required: d}}
	}
	legacy := withConstraints(legacyTC("block"), legacyTC("rack"))
	repaired := withConstraints(named("gpu", "block"), legacyTC("rack"))

	cases := []struct {
		name     string
		old, new *corev1alpha1.PodCliqueSet
		paths    []string
	}{
		{"topologyName added to a legacy constraint", legacy, repaired, nil},
		{"then packDomain moved to pack.required", repaired, withConstraints(required("gpu", "block"), legacyTC("rack")), nil},
		{"a child's packDomain moved to pack.required", repaired, withConstraints(named("gpu", "block"), &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}}), nil},
		{"both steps in one update", legacy, withConstraints(required("gpu", "block"), legacyTC("rack")),
			[]string{"spec.template.topologyConstraint"}},
		{"a repair that also changes the domain", legacy, withConstraints(named("gpu", "rack"), legacyTC("rack")),
			[]string{"spec.template.topologyConstraint"}},
		{"a topologyName added to an object that already names one", repaired, withConstraints(named("gpu", "block"), named("gpu", "rack")),
			[]string{"spec.template.podCliqueScalingGroups[0].topologyConstraint"}},
		{"a repair naming a topology that does not exist", legacy, withConstraints(named("missing", "block"), legacyTC("rack")),
			[]string{"spec.template.topologyConstraint.topologyName"}},
		{"a move to pack.required with another domain", repaired, withConstraints(required("gpu", "zone"), legacyTC("rack")),
			[]string{"spec.template.topologyConstraint"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.ValidateUpdate(ctx, tc.old.DeepCopy(), tc.new.DeepCopy())
			if tc.paths == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, p := range tc.paths {
				assert.Contains(t, err.Error(), p)
			}
		})
	}
}
