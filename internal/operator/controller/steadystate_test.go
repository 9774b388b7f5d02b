package controller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// resourceVersions maps kind/name to resourceVersion for every object the operator made.
func (e *env) resourceVersions(t require.TestingT) map[string]string {
	out := map[string]string{}
	for kind, list := range map[string]client.ObjectList{
		"PodClique": &corev1alpha1.PodCliqueList{}, "PodCliqueScalingGroup": &corev1alpha1.PodCliqueScalingGroupList{},
		"PodGang": &schedv1alpha1.PodGangList{}, "Service": &corev1.ServiceList{}, "Pod": &corev1.PodList{},
	} {
		require.NoError(t, e.c.List(e.ctx, list, client.InNamespace(e.ns)))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, it := range items {
			o := it.(client.Object)
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

// TestSteadyStateWritesNothing: once converged, reconciling again (the PodCliqueSet's
// generation changes without touching its template) writes no object and no status.
func TestSteadyStateWritesNothing(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "steady", 1)
	e.create(pcs)
	var before map[string]string
	e.eventually(func(c *assert.CollectT) {
		// Converged: every PodClique reports all its pods (and the gated ones), the PodGangs are
		// initialized, the PodCliqueSet reports its replica as updated ...
		gatedPods := map[string]int32{}
		for _, p := range e.pods("") {
			if gated(&p) {
				gatedPods[p.Labels[apicommon.LabelPodClique]]++
			}
		}
		pclqs := &corev1alpha1.PodCliqueList{}
		require.NoError(c, e.c.List(e.ctx, pclqs, client.InNamespace(e.ns)))
		assert.Len(c, pclqs.Items, 5)
		for _, p := range pclqs.Items {
			assert.Equal(c, p.Spec.Replicas, p.Status.Replicas, p.Name)
			assert.Equal(c, gatedPods[p.Name], p.Status.ScheduleGatedReplicas, p.Name)
		}
		for _, name := range []string{"steady-0", "steady-0-workers-0"} {
			init := condition(e.podGang(c, name).Status.Conditions, schedv1alpha1.PodGangConditionInitialized)
			assert.True(c, init != nil && init.Status == metav1.ConditionTrue, name)
		}
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(pcs), got))
		assert.EqualValues(c, 1, got.Status.Replicas)
		assert.EqualValues(c, 1, got.Status.UpdatedReplicas)
		// ... and two reads a moment apart agree.
		first := e.resourceVersions(c)
		// Converged: two reads a moment apart agree.
		time.Sleep(500 * time.Millisecond)
		before = e.resourceVersions(c)
		assert.Equal(c, first, before)
	})

	e.update(pcs, func() {
		pcs.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.OnDeleteStrategy}
	})
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(pcs), got))
		if assert.NotNil(c, got.Status.ObservedGeneration) {
			assert.Equal(c, got.Generation, *got.Status.ObservedGeneration, "the new generation was reconciled")
		}
	})
	var changed []string
	assert.Never(t, func() bool {
		changed = changed[:0]
		for k, v := range e.resourceVersions(t) {
			if before[k] != v {
				changed = append(changed, k)
			}
		}
		return len(changed) > 0
	}, 2*time.Second, tick, "no object or status was rewritten")
	assert.Empty(t, changed)
}
