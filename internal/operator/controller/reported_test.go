package controller_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestMissingPriorityClassIsReported: the pods name a PriorityClass that does not exist yet, so
// the apiserver refuses them. The PodCliqueSet says so (condition and event naming the class)
// instead of waiting silently, and once the class is created the pods follow and the condition
// clears.
func TestMissingPriorityClassIsReported(t *testing.T) {
	e := newEnv(t)
	class := "later-" + rand.String(6)
	pcs := disaggregated(e.ns, "prio", 1)
	pcs.Spec.Template.PriorityClassName = class
	e.create(pcs)

	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(pcs), got))
		cond := condition(got.Status.Conditions, apicommon.ConditionPriorityClassNotFound)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionTrue, cond.Status)
		assert.Equal(c, apicommon.ReasonPriorityClassNotFound, cond.Reason)
		assert.Contains(c, cond.Message, class)
	}, "the PodCliqueSet reports the missing PriorityClass")
	assert.Positive(t, e.eventCount(apicommon.ReasonPriorityClassNotFound))
	assert.Empty(t, e.pods(""), "the apiserver refuses pods naming a missing PriorityClass")

	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000}
	require.NoError(t, e.c.Create(e.ctx, pc))
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), pc) })
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(pcs), got))
		cond := condition(got.Status.Conditions, apicommon.ConditionPriorityClassNotFound)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		var pods corev1.PodList
		require.NoError(c, e.c.List(e.ctx, &pods, client.InNamespace(e.ns)))
		assert.Len(c, pods.Items, 1+2*(2+1), "router, and two replicas of prefill (2) and decode (1)")
	}, "the pods are created once the PriorityClass exists")
}

// TestForeignPodGangNameIsReported: an object the PodCliqueSet does not own holds the name of
// its base PodGang. The PodCliqueSet says so (condition and event naming the object) instead of
// waiting silently with gated pods, and takes the name once it is free.
func TestForeignPodGangNameIsReported(t *testing.T) {
	e := newEnv(t)
	foreign := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: apicommon.BasePodGangName("taken", 0)},
		Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: "someone-else", MinReplicas: 1,
			PodReferences: []schedv1alpha1.NamespacedName{{Namespace: e.ns, Name: "their-pod"}}}}}}
	e.create(foreign)
	e.create(disaggregated(e.ns, "taken", 1))

	conflict := func(c *assert.CollectT) *metav1.Condition {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "taken"}, got))
		cond := condition(got.Status.Conditions, apicommon.ConditionPodGangConflict)
		require.NotNil(c, cond)
		return cond
	}
	e.eventually(func(c *assert.CollectT) {
		cond := conflict(c)
		assert.Equal(c, metav1.ConditionTrue, cond.Status)
		assert.Equal(c, apicommon.ReasonPodGangNameTaken, cond.Reason)
		assert.Contains(c, cond.Message, foreign.Name)
	}, "the PodCliqueSet reports the PodGang name held by a foreign object")
	assert.Positive(t, e.eventCount(apicommon.ReasonPodGangNameTaken))
	assert.Nil(t, metav1.GetControllerOf(e.podGang(t, foreign.Name)), "the foreign PodGang is left alone")

	require.NoError(t, e.c.Delete(e.ctx, foreign))
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, metav1.ConditionFalse, conflict(c).Status)
		pg := e.podGang(c, foreign.Name)
		ref := metav1.GetControllerOf(pg)
		require.NotNil(c, ref)
		assert.Equal(c, "taken", ref.Name)
	}, "the PodCliqueSet takes the name once it is free")
}
