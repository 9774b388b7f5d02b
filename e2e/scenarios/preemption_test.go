//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Priority classes of the preemption scenarios.
const (
	lowPriority  = "grove-e2e-low"
	highPriority = "grove-e2e-high"
)

func createPriorityClasses(t *testing.T, env *framework.Env) {
	t.Helper()
	for name, value := range map[string]int32{lowPriority: 100, highPriority: 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		require.NoError(t, env.Client.Create(context.Background(), pc))
	}
}

// prioritized is a PodCliqueSet of one 2-pod clique (one gang of 2) at a priority class.
func prioritized(ns, name, priorityClass string) *corev1alpha1.PodCliqueSet {
	p := pcs(ns, name, 1, clique("w", 2, "1"))
	p.Spec.Template.PriorityClassName = priorityClass
	return p
}

// fillWithLowGangs fills 4 one-pod nodes with two low-priority gangs of 2 and returns their
// pods' UIDs by PodCliqueSet.
func fillWithLowGangs(t *testing.T, env *framework.Env, ns string) map[string]map[types.UID]bool {
	t.Helper()
	ctx := context.Background()
	uids := map[string]map[types.UID]bool{}
	for _, name := range []string{"low-a", "low-b"} {
		require.NoError(t, env.Client.Create(ctx, prioritized(ns, name, lowPriority)))
		uids[name] = map[types.UID]bool{}
		for _, p := range waitPods(t, env, ns, name, 2) {
			uids[name][p.UID] = true
		}
	}
	return uids
}

// survivors counts, per PodCliqueSet, how many of the given pods still exist bound.
func survivors(t *testing.T, env *framework.Env, ns string, uids map[string]map[types.UID]bool) map[string]int {
	out := map[string]int{}
	for name, set := range uids {
		out[name] = 0
		for _, p := range livePods(podsOf(t, env, ns, name)) {
			if set[p.UID] && p.Spec.NodeName != "" {
				out[name]++
			}
		}
	}
	return out
}

// evictedWhole checks that every gang lost all of its pods or none: deletions per PodGang of
// the namespace are 0 or the gang's size.
func evictedWhole(t *testing.T, w *gangWatcher, ns string, size int) map[string]int {
	t.Helper()
	perGang := map[string]int{}
	for _, d := range w.deletionsIn(ns) {
		perGang[d.pod.Labels[common.LabelPodGang]]++
	}
	for gang, n := range perGang {
		assert.Equalf(t, size, n, "PodGang %s lost %d of its %d pods: preemption split it", gang, n, size)
	}
	return perGang
}

// preemptedBy waits for the victim PodGang's DisruptionTarget condition naming the preemptor.
func preemptedBy(t *testing.T, env *framework.Env, ns, victim, preemptor string) {
	t.Helper()
	var last string
	if !assert.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, victim).Status.Conditions, schedv1alpha1.PodGangConditionDisruptionTarget)
		if c == nil {
			last = "no DisruptionTarget condition"
			return false
		}
		last = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		return c.Status == metav1.ConditionTrue && c.Reason == common.ReasonPreempted && strings.Contains(c.Message, preemptor)
	}, time.Minute, 250*time.Millisecond) {
		t.Fatalf("PodGang %s never said it was preempted by %s; last: %s", victim, preemptor, last)
	}
	var events corev1.EventList
	require.NoError(t, env.Client.List(context.Background(), &events, client.InNamespace(ns)))
	found := false
	for _, ev := range events.Items {
		found = found || ev.InvolvedObject.Kind == "PodGang" && ev.InvolvedObject.Name == victim && ev.Reason == common.EventReasonPreempted &&
			strings.Contains(ev.Message, preemptor)
	}
	assert.Truef(t, found, "no %s event on PodGang %s naming %s", common.EventReasonPreempted, victim, preemptor)
}

// (a) Two low-priority gangs fill the nodes; a high-priority gang of 2 arrives. Exactly one low
// gang is evicted, whole; the high gang is placed whole; the other low gang keeps its pods, and
// the evicted gang's recreated pods wait (nothing fits them) — and that holds.
func TestHighPriorityGangPreemptsWholeLowPriorityGang(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 4, oneCPUNode)
	createPriorityClasses(t, env)
	uids := fillWithLowGangs(t, env, ns)

	require.NoError(t, env.Client.Create(context.Background(), prioritized(ns, "high", highPriority)))
	waitPods(t, env, ns, "high", 2)
	waitScheduled(t, env, ns, common.BasePodGangName("high", 0))

	left := survivors(t, env, ns, uids)
	assert.ElementsMatch(t, []int{0, 2}, []int{left["low-a"], left["low-b"]}, "exactly one low gang is evicted, whole: %v", left)
	victim := "low-a"
	if left["low-a"] == 2 {
		victim = "low-b"
	}
	preemptedBy(t, env, ns, common.BasePodGangName(victim, 0), common.BasePodGangName("high", 0))
	// The evicted gang is recreated and waits whole; the counts hold.
	assert.Never(t, func() bool {
		return countBound(podsOf(t, env, ns, victim)) != 0 || countBound(podsOf(t, env, ns, "high")) != 2 ||
			survivors(t, env, ns, uids)[map[string]string{"low-a": "low-b", "low-b": "low-a"}[victim]] != 2
	}, 5*time.Second, 250*time.Millisecond, "placements changed after the preemption")
	assert.Equal(t, map[string]int{common.BasePodGangName(victim, 0): 2}, evictedWhole(t, w, ns, 2))

	// The preemptor leaves: the victim is placed again, and its DisruptionTarget condition says
	// the disruption is over instead of staying True on a running gang.
	require.NoError(t, env.Client.Delete(context.Background(), pcsRef(ns, "high")))
	victimGang := common.BasePodGangName(victim, 0)
	waitScheduled(t, env, ns, victimGang)
	var last string
	if !assert.Eventually(t, func() bool {
		pg := &schedv1alpha1.PodGang{}
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victimGang}, pg))
		c := apimeta.FindStatusCondition(pg.Status.Conditions, schedv1alpha1.PodGangConditionDisruptionTarget)
		if c == nil {
			last = "no DisruptionTarget condition"
			return false
		}
		last = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		return c.Status == metav1.ConditionFalse && c.Reason == common.ReasonRescheduledAfterPreemption
	}, time.Minute, 250*time.Millisecond) {
		t.Errorf("PodGang %s placed again still says it is a disruption target: %s", victimGang, last)
	}
	w.assertNoPartialGang()
}

// (b) A high-priority pod outside gangs on nodes full of low-priority gangs: a whole gang is
// evicted (never one member of it) and the pod is bound.
func TestHighPriorityPodEvictsAWholeGangOrNothing(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 4, oneCPUNode)
	createPriorityClasses(t, env)
	uids := fillWithLowGangs(t, env, ns)

	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "urgent", Namespace: ns},
		Spec: corev1.PodSpec{SchedulerName: "grove-scheduler", PriorityClassName: highPriority, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	require.NoError(t, env.Client.Create(ctx, pod))
	require.Eventually(t, func() bool {
		got := &corev1.Pod{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got) == nil && got.Spec.NodeName != ""
	}, 2*time.Minute, 250*time.Millisecond, "the high-priority pod was never bound")

	left := survivors(t, env, ns, uids)
	assert.ElementsMatch(t, []int{0, 2}, []int{left["low-a"], left["low-b"]}, "exactly one low gang is evicted, whole: %v", left)
	victim := "low-a"
	if left["low-a"] == 2 {
		victim = "low-b"
	}
	preemptedBy(t, env, ns, common.BasePodGangName(victim, 0), "urgent")
	assert.Never(t, func() bool { return countBound(podsOf(t, env, ns, victim)) != 0 }, 5*time.Second, 250*time.Millisecond,
		"a pod of the evicted gang was bound next to the preemptor")
	assert.Equal(t, map[string]int{common.BasePodGangName(victim, 0): 2}, evictedWhole(t, w, ns, 2))
	w.assertNoPartialGang()
}

// (c) Equal priority: a newcomer gang does not preempt the gangs holding the nodes; it waits
// whole, saying why, and nothing is evicted.
func TestEqualPriorityGangPreemptsNothing(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 4, oneCPUNode)
	createPriorityClasses(t, env)
	uids := fillWithLowGangs(t, env, ns)

	require.NoError(t, env.Client.Create(context.Background(), prioritized(ns, "peer", lowPriority)))
	gang := common.BasePodGangName("peer", 0)
	var last string
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, gang).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		if c == nil {
			return false
		}
		last = c.Reason + ": " + c.Message
		return c.Status == metav1.ConditionFalse && c.Reason == common.ReasonUnschedulable && strings.Contains(c.Message, "fit")
	}, time.Minute, 250*time.Millisecond, "the newcomer never said why it waits (last: %s)", last)
	assert.Never(t, func() bool {
		left := survivors(t, env, ns, uids)
		return left["low-a"] != 2 || left["low-b"] != 2 || countBound(podsOf(t, env, ns, "peer")) != 0
	}, 10*time.Second, 250*time.Millisecond, "a gang of equal priority was preempted or the newcomer bound")
	assert.Empty(t, w.deletionsIn(ns), "nothing may be evicted")
	w.assertNoPartialGang()
}
