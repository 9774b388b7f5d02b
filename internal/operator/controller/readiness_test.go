package controller_test

import (
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// setScheduled writes a PodGang's Scheduled condition the way grove-scheduler does.
func (e *env) setScheduled(name string, status metav1.ConditionStatus, reason, message string) {
	e.t.Helper()
	require.NoError(e.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg := &schedv1alpha1.PodGang{}
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pg); err != nil {
			return err
		}
		meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: schedv1alpha1.PodGangConditionScheduled,
			Status: status, Reason: reason, Message: message})
		return e.c.Status().Update(e.ctx, pg)
	}))
}

// readyOf reads the PodCliqueSet's Ready condition and gang counts.
func (e *env) readyOf(c *assert.CollectT, name string) (*metav1.Condition, int32, int32) {
	pcs := &corev1alpha1.PodCliqueSet{}
	if !assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pcs)) {
		return nil, 0, 0
	}
	return meta.FindStatusCondition(pcs.Status.Conditions, apicommon.ConditionReady), pcs.Status.TotalPodGangs, pcs.Status.ScheduledPodGangs
}

// TestReadyRollsUpPodGangs follows a PodCliqueSet from unplaced gangs through an unschedulable
// one to every gang placed and every pod ready: the Ready condition names the first gang that
// holds it back, quoting the scheduler's reason, and the gang counts follow.
func TestReadyRollsUpPodGangs(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, grovemetrics.Register(e.c))
	created := promtestutil.ToFloat64(grovemetrics.PodsCreated)
	e.create(disaggregated(e.ns, "ready", 1))

	e.eventually(func(c *assert.CollectT) {
		cond, total, scheduled := e.readyOf(c, "ready")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonPodGangNotScheduled, cond.Reason)
			assert.Contains(c, cond.Message, "PodGang ready-0 not scheduled: ready-0-router has 0 of 1 pods bound")
		}
		assert.Equal(c, int32(2), total)
		assert.Equal(c, int32(0), scheduled)
	}, "no gang is placed yet")

	e.setScheduled("ready-0", metav1.ConditionFalse, apicommon.ReasonUnschedulable, "needs 3 pods within one rack; the best rack fits 2")
	e.eventually(func(c *assert.CollectT) {
		cond, _, _ := e.readyOf(c, "ready")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonPodGangUnschedulable, cond.Reason)
			assert.Equal(c, "PodGang ready-0 unschedulable: needs 3 pods within one rack; the best rack fits 2", cond.Message)
		}
	}, "the scheduler's reason reaches the PodCliqueSet")

	e.setScheduled("ready-0", metav1.ConditionTrue, "Scheduled", "")
	e.eventually(func(c *assert.CollectT) {
		cond, _, scheduled := e.readyOf(c, "ready")
		assert.Equal(c, int32(1), scheduled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonPodGangNotScheduled, cond.Reason)
			assert.Contains(c, cond.Message, "PodGang ready-0-workers-0 not scheduled")
		}
	}, "the next gang in replica order is named")

	e.setScheduled("ready-0-workers-0", metav1.ConditionTrue, "Scheduled", "")
	e.eventually(func(c *assert.CollectT) {
		cond, _, scheduled := e.readyOf(c, "ready")
		assert.Equal(c, int32(2), scheduled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonReplicasUnavailable, cond.Reason)
			assert.Contains(c, cond.Message, "0 of 1 replicas available; PodClique ready-0-router has 0 of at least 1 pods ready")
		}
	}, "placed but no pod ready")

	e.runAll(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		cond, total, scheduled := e.readyOf(c, "ready")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, apicommon.ReasonPodCliqueSetReady, cond.Reason)
		}
		assert.Equal(c, int32(2), total)
		assert.Equal(c, int32(2), scheduled)
	}, "every gang placed and every replica available")

	// The operator's metrics moved with it (other tests may run alongside: at least).
	const pods = 7 // router 1 + 2 × (prefill 2 + decode 1)
	assert.GreaterOrEqual(t, promtestutil.ToFloat64(grovemetrics.PodsCreated)-created, float64(pods))
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	assert.GreaterOrEqual(t, got["grove_podcliquesets,ready=true"], 1.0, "state gauges: %v", got)
	assert.GreaterOrEqual(t, got["grove_podcliqueset_replicas,state=available"], 1.0)
	assert.GreaterOrEqual(t, got["grove_podgangs,phase=Pending,scheduled=true"], 2.0, "the test wrote Scheduled but no phase")
}
