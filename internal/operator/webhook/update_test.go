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
