package controller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestSchedulingGatesOpenInGangOrder: pods of the base PodGang are ungated as soon as their
// gang lists them; pods of a scaled PodGang stay gated until every group of the base gang has
// minReplicas pods scheduled (pods are "scheduled" here by binding them to a Node).
func TestSchedulingGatesOpenInGangOrder(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "order", 1))
	base := []string{"order-0-router", "order-0-workers-0-prefill", "order-0-workers-0-decode"}
	scaled := []string{"order-0-workers-1-prefill", "order-0-workers-1-decode"}

	e.eventually(func(c *assert.CollectT) {
		for _, pclq := range base {
			for _, p := range e.pods(pclq) {
				assert.False(c, gated(&p), "base gang pod %s", p.Name)
			}
		}
		scaledGang := e.podGang(c, "order-0-workers-0")
		for i, pclq := range scaled {
			pods := e.pods(pclq)
			assert.Equal(c, podNames(pods), refNames(scaledGang.Spec.PodGroups[i]), "the scaled gang lists its pods")
			// The PodClique controller has seen those pods (and the gang) and left them gated.
			pc := &corev1alpha1.PodClique{}
			if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: pclq}, pc)) {
				assert.EqualValues(c, pc.Spec.Replicas, pc.Status.ScheduleGatedReplicas)
			}
		}
	})
	for _, pclq := range scaled {
		for _, p := range e.pods(pclq) {
			assert.True(t, gated(&p), "scaled gang pod %s must wait for the base gang", p.Name)
		}
	}

	node := e.node()
	// Schedule the base gang except its prefill group: still below minReplicas there.
	for _, pclq := range []string{"order-0-router", "order-0-workers-0-decode"} {
		for _, p := range e.pods(pclq) {
			e.bind(&p, node)
		}
	}
	e.eventually(func(c *assert.CollectT) {
		pc := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "order-0-workers-0-decode"}, pc))
		assert.EqualValues(c, 1, pc.Status.ScheduledReplicas)
	})
	assert.Never(t, func() bool {
		for _, pclq := range scaled {
			for _, p := range e.pods(pclq) {
				if !gated(&p) {
					return true
				}
			}
		}
		return false
	}, 2*time.Second, tick, "a base group below minReplicas keeps the scaled gang gated")

	prefill := e.pods("order-0-workers-0-prefill")
	require.Len(t, prefill, 2)
	for _, p := range prefill {
		e.bind(&p, node)
	}
	e.eventually(func(c *assert.CollectT) {
		for _, pclq := range scaled {
			pods := e.pods(pclq)
			assert.NotEmpty(c, pods)
			for _, p := range pods {
				assert.False(c, gated(&p), "scaled gang pod %s once the base gang is scheduled", p.Name)
			}
		}
	})
}
