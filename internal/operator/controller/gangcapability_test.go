package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend/kube"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestGangSchedulingUnavailableOnDefaultSchedulerWithoutTheWorkloadAPI runs a PodCliqueSet on
// default-scheduler in a cluster that does not serve the Workload API (the shared control
// plane) next to one on grove-scheduler: only the first says its gangs are not enforced, and
// its pods go to default-scheduler without a scheduling group.
func TestGangSchedulingUnavailableOnDefaultSchedulerWithoutTheWorkloadAPI(t *testing.T) {
	e := newEnv(t)
	onKube := disaggregated(e.ns, "on-kube", 1)
	for _, c := range onKube.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "default-scheduler"
	}
	e.create(onKube)
	e.create(disaggregated(e.ns, "on-grove", 1))

	get := func(c *assert.CollectT, name string) *corev1alpha1.PodCliqueSet {
		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pcs))
		return pcs
	}
	e.eventually(func(c *assert.CollectT) {
		pcs := get(c, "on-kube")
		cond := condition(pcs.Status.Conditions, apicommon.ConditionGangSchedulingUnavailable)
		if assert.NotNil(c, cond, "condition on the default-scheduler PodCliqueSet") {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, "GangSchedulingNotSupported", cond.Reason)
			assert.Equal(c, kube.GangUnavailableMessage, cond.Message)
			assert.Equal(c, pcs.Generation, cond.ObservedGeneration)
		}
		assert.NotNil(c, get(c, "on-grove").Status.ObservedGeneration, "the grove-scheduler PodCliqueSet's status was written")
		assert.Nil(c, condition(get(c, "on-grove").Status.Conditions, apicommon.ConditionGangSchedulingUnavailable),
			"grove-scheduler always schedules gangs")
		assert.Len(c, e.pods("on-kube-0-router"), 1)
	})
	pod := e.pods("on-kube-0-router")[0]
	assert.Equal(t, "default-scheduler", pod.Spec.SchedulerName)
	assert.Nil(t, pod.Spec.SchedulingGroup, "no PodGroup to join without the Workload API")
}

// TestPodCliqueSetOnDefaultSchedulerWithTheWorkloadAPI runs a PodCliqueSet on default-scheduler
// in a cluster that serves the whole Workload API: every pod joins the scheduling.k8s.io
// PodGroup of its PodClique, whose parent is the CompositePodGroup of the pod's PodGang.
func TestPodCliqueSetOnDefaultSchedulerWithTheWorkloadAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	t.Parallel()
	cp := cluster.StartForTest(t, cluster.Options{
		FeatureGates:  map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true},
		RuntimeConfig: []string{"scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"},
	})
	e := newEnvOn(t, cp)
	pcs := disaggregated(e.ns, "wl", 1)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "default-scheduler"
	}
	e.create(pcs)

	e.eventually(func(c *assert.CollectT) {
		// Base gang: router + workers replica 0 (three PodGroups); scaled gang: workers replica 1.
		assert.Equal(c, []string{"wl-0", "wl-0-workers-0"}, e.names(&schedulingv1alpha3.CompositePodGroupList{}))
		assert.Equal(c, []string{"wl-0-wl-0-router", "wl-0-wl-0-workers-0-decode", "wl-0-wl-0-workers-0-prefill",
			"wl-0-workers-0-wl-0-workers-1-decode", "wl-0-workers-0-wl-0-workers-1-prefill"}, e.names(&schedulingv1beta1.PodGroupList{}))
		assert.Len(c, e.pods(""), 7)
	})
	minGroupCount := map[string]int32{}
	for _, name := range []string{"wl-0", "wl-0-workers-0"} {
		cpg := &schedulingv1alpha3.CompositePodGroup{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, cpg))
		minGroupCount[name] = cpg.Spec.SchedulingPolicy.Gang.MinGroupCount
	}
	assert.Equal(t, map[string]int32{"wl-0": 3, "wl-0-workers-0": 2}, minGroupCount, "every PodGroup of a PodGang is needed")

	for _, pod := range e.pods("") {
		require.NotNil(t, pod.Spec.SchedulingGroup, pod.Name)
		pg := &schedulingv1beta1.PodGroup{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: *pod.Spec.SchedulingGroup.PodGroupName}, pg), pod.Name)
		assert.Equal(t, pod.Labels[apicommon.LabelPodGang], *pg.Spec.ParentCompositePodGroupName, "%s joins a PodGroup of its own PodGang", pod.Name)
		pclq := &corev1alpha1.PodClique{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: pod.Labels[apicommon.LabelPodClique]}, pclq))
		assert.Equal(t, *pclq.Spec.MinAvailable, pg.Spec.SchedulingPolicy.Gang.MinCount, "%s: the gang of its PodClique", pod.Name)
		assert.Equal(t, "default-scheduler", pod.Spec.SchedulerName)
	}

	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "wl"}, got))
		cond := condition(got.Status.Conditions, apicommon.ConditionGangSchedulingUnavailable)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, "GangSchedulingSupported", cond.Reason)
			assert.Equal(c, kube.GangCompositeMessage, cond.Message)
		}
	})
}
