package controller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// oneClique is a PodCliqueSet of one standalone clique: one PodGang with one PodGroup.
func oneClique(ns, name string, replicas int32, minAvailable *int32) *corev1alpha1.PodCliqueSet {
	clique := cliqueTemplate("w", replicas)
	clique.Spec.MinAvailable = minAvailable
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique}}},
	}
}

// ungatedPods waits until the PodClique has n live pods, all ungated, and returns them.
func (e *env) ungatedPods(pclq string, n int) []corev1.Pod {
	e.t.Helper()
	var pods []corev1.Pod
	e.eventually(func(c *assert.CollectT) {
		pods = e.pods(pclq)
		if assert.Len(c, pods, n) {
			for _, p := range pods {
				assert.False(c, gated(&p), "%s ungated", p.Name)
			}
		}
	}, "%s has %d ungated pods", pclq, n)
	return pods
}

// TestPartialGangReleased: a gang is left with one of its three members bound, as a scheduler
// that crashed between two bindings leaves it, and nothing binds the rest. After
// podGang.partialBindingTimeout its bound member is deleted and recreated gated, the PodGang's
// Unhealthy condition and an event say why, and no member stays bound. A complete gang and a
// gang that misses only pods above its quorum, bound before it, keep their pods.
func TestPartialGangReleased(t *testing.T) {
	const timeout = 3 * time.Second
	e := newEnv(t, withConfig(func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.PodGang.PartialBindingTimeout = metav1.Duration{Duration: timeout}
	}))
	node := e.kwokNode()
	e.create(oneClique(e.ns, "whole", 2, nil))
	e.create(oneClique(e.ns, "elastic", 3, ptr.To[int32](2)))
	e.create(oneClique(e.ns, "partial", 3, nil))

	kept := map[types.UID]string{}
	for _, p := range e.ungatedPods("whole-0-w", 2) {
		e.bind(&p, node)
		kept[p.UID] = p.Name
	}
	for _, p := range e.ungatedPods("elastic-0-w", 3)[:2] {
		e.bind(&p, node)
		kept[p.UID] = p.Name
	}
	partial := e.ungatedPods("partial-0-w", 3)
	e.bind(&partial[0], node)

	e.eventually(func(c *assert.CollectT) {
		cond := condition(e.podGang(c, "partial-0").Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
		if assert.NotNil(c, cond, "Unhealthy condition") {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonPartialGangReleased, cond.Reason)
			assert.Contains(c, cond.Message, partial[0].Name)
		}
		pods := e.pods("partial-0-w")
		assert.Len(c, pods, 3, "the released member is recreated")
		for _, p := range pods {
			assert.NotEqual(c, partial[0].UID, p.UID, "the bound member was deleted")
			assert.Empty(c, p.Spec.NodeName, "%s is not bound", p.Name)
		}
	}, "the partly bound gang is released")
	assert.GreaterOrEqual(t, e.eventCount(apicommon.ReasonPartialGangReleased), 1, "an event says why")
	owners := conditionOwners(t, e.podGang(t, "partial-0"))
	assert.Equal(t, []string{apicommon.PartialGangFieldManager}, owners[schedv1alpha1.PodGangConditionUnhealthy], "Unhealthy has its own writer")
	assert.Equal(t, []string{apicommon.OperatorFieldManager}, owners[schedv1alpha1.PodGangConditionInitialized], "Initialized has its own writer")

	live := map[types.UID]string{}
	for _, p := range append(e.pods("whole-0-w"), e.pods("elastic-0-w")...) {
		live[p.UID] = p.Name
	}
	for uid, name := range kept {
		assert.Contains(t, live, uid, "%s of a gang at its quorum is kept", name)
	}
	for _, name := range []string{"whole-0", "elastic-0"} {
		cond := condition(e.podGang(t, name).Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
		assert.Nil(t, cond, "PodGang %s was never partly bound", name)
	}
}

// TestPartialGangCompletedInTimeKeepsPods: a gang that completes before the timeout keeps its
// pods, and the condition that reported it partly bound says it is resolved.
func TestPartialGangCompletedInTimeKeepsPods(t *testing.T) {
	e := newEnv(t, withConfig(func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.PodGang.PartialBindingTimeout = metav1.Duration{Duration: time.Hour}
	}))
	node := e.kwokNode()
	e.create(oneClique(e.ns, "late", 2, nil))
	pods := e.ungatedPods("late-0-w", 2)
	e.bind(&pods[0], node)
	// The condition is written once the gang has been partly bound for a while (10s).
	e.eventually(func(c *assert.CollectT) {
		cond := condition(e.podGang(c, "late-0").Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, apicommon.ReasonPartiallyBound, cond.Reason)
		}
	}, "the partly bound gang is reported")
	// The clock is the member's binding, which the API keeps: a restarted operator reads the same.
	bound := &corev1.Pod{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(&pods[0]), bound))
	var boundAt metav1.Time
	for _, c := range bound.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			boundAt = c.LastTransitionTime
		}
	}
	require.False(t, boundAt.IsZero(), "the binding set PodScheduled")
	cond := condition(e.podGang(t, "late-0").Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
	assert.True(t, cond.LastTransitionTime.Equal(&boundAt), "PartiallyBound since %s, the binding at %s", cond.LastTransitionTime, boundAt)

	e.bind(&pods[1], node)
	e.eventually(func(c *assert.CollectT) {
		cond := condition(e.podGang(c, "late-0").Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonPartialBindingResolved, cond.Reason)
		}
	}, "the completed gang is no longer reported")
	now := e.pods("late-0-w")
	require.Len(t, now, 2)
	for i := range now {
		assert.Equal(t, pods[i].UID, now[i].UID, "the completed gang keeps its pods")
	}
	assert.Zero(t, e.eventCount(apicommon.ReasonPartialGangReleased))
}
