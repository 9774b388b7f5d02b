package webhook_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestMetadataOnlyUpdatesPassWhileTheOperatorIsDown: the webhook configurations of
// config/webhook point at an endpoint nothing serves (grove-operator down). Spec changes and
// creates stay refused (failurePolicy Fail), but label changes and removing a finalizer as a
// break-glass, including on an object being deleted, go through: the matchConditions keep
// them from calling the webhooks at all.
func TestMetadataOnlyUpdatesPassWhileTheOperatorIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	t.Parallel()
	cp := cluster.StartForTest(t, cluster.Options{WithoutControllerManager: true})
	ctx := context.Background()
	c, err := client.New(cp.Config, client.Options{Scheme: newScheme()})
	require.NoError(t, err)
	ns := cp.TestNamespace(t)

	// Objects made while no webhook is registered, as if admitted before the operator died.
	pcs := newPCS(ns, "orphaned")
	pcs.Spec.Template.Cliques[0].Spec.MinAvailable = new(int32(1))
	pcs.Spec.Template.Cliques[1].Spec.MinAvailable = new(int32(1))
	pcs.Spec.Template.Cliques[2].Spec.MinAvailable = new(int32(1))
	pcs.Finalizers = []string{"grove.io/podcliqueset.grove.io"}
	require.NoError(t, c.Create(ctx, pcs))
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "orphaned-" + ns, Finalizers: []string{"grove.io/clustertopology.grove.io"}},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}, {Domain: "host", Key: "h"}}}}
	require.NoError(t, c.Create(ctx, ct))

	port, err := cluster.FreePort()
	require.NoError(t, err)
	ca, err := webhooktest.NewCA()
	require.NoError(t, err)
	require.NoError(t, webhooktest.Install(ctx, c, "https://127.0.0.1:"+strconv.Itoa(port), ca.PEM))

	update := func(obj client.Object, mutate func()) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			mutate()
			return c.Update(ctx, obj)
		})
	}
	// The webhooks are really in the way: a spec change fails once the configurations are live.
	require.Eventually(t, func() bool {
		err := update(pcs, func() { pcs.Spec.Replicas++ })
		return err != nil
	}, time.Minute, 200*time.Millisecond, "a spec change must be refused while the webhook is unreachable")
	require.Error(t, c.Create(ctx, newPCS(ns, "new")), "creates must be refused while the webhook is unreachable")

	require.NoError(t, update(pcs, func() { pcs.Labels = map[string]string{"triage": "operator-down"} }))
	require.NoError(t, update(ct, func() { ct.Labels = map[string]string{"triage": "operator-down"} }))

	require.NoError(t, c.Delete(ctx, pcs))
	require.NoError(t, update(pcs, func() { pcs.Finalizers = nil }), "break-glass finalizer removal")
	require.NoError(t, c.Delete(ctx, ct))
	require.NoError(t, update(ct, func() { ct.Finalizers = nil }), "break-glass finalizer removal")
}
