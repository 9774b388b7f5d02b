package schedulere2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// priorityClass creates a PriorityClass for the test (cluster-scoped, so named after its
// namespace) and returns its name.
func (e *env) priorityClass(name string, value int32) string {
	e.t.Helper()
	full := e.ns + "-" + name
	_, err := e.admin.SchedulingV1().PriorityClasses().Create(e.ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: full}, Value: value}, metav1.CreateOptions{})
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = e.admin.SchedulingV1().PriorityClasses().Delete(e.ctx, full, metav1.DeleteOptions{}) })
	return full
}

func withPriority(class string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.PriorityClassName = class }
}

func prioritizedGang(name string, n int32, class string, constraint *v1alpha1.TopologyConstraint) gang {
	return gang{name: name, constraint: constraint, groups: []group{{name: "w", min: n, replicas: n, cpu: "1", pod: withPriority(class)}}}
}

// plainPod is a 1-CPU pod outside gangs.
func (e *env) plainPod(name, class string) *v1.Pod {
	e.t.Helper()
	pod, err := e.admin.CoreV1().Pods(e.ns).Create(e.ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1.PodSpec{SchedulerName: e.schedulerName, PriorityClassName: class, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
	return pod
}

func (e *env) waitPodBound(name string) string {
	e.t.Helper()
	var node string
	e.eventually("pod "+name+" bound", func() (bool, string) {
		pod, err := e.admin.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		node = pod.Spec.NodeName
		return node != "", fmt.Sprintf("conditions %v", pod.Status.Conditions)
	})
	return node
}

// A high-priority gang that must fit in one rack evicts the gang whose rack costs least —
// one whole gang in rack r1 rather than two gangs in r2 — and lands there; nothing else moves.
func TestGangPreemptsTheCheapestWholeGangsInsideItsRequiredRack(t *testing.T) {
	e := newEnv(t, envOptions{})
	low, high := e.priorityClass("low", 100), e.priorityClass("high", 1000)
	e.addNodes(rack("a0", "1", "r1"), rack("a1", "1", "r1"), rack("b0", "1", "r2"), rack("b1", "1", "r2"))
	e.createGang(prioritizedGang("pair", 2, low, required(rackKey)))
	e.waitBound("pair", 2)
	for _, name := range []string{"one", "two"} {
		e.createGang(prioritizedGang(name, 1, low, nil))
		e.waitBound(name, 1)
	}
	pairRack := map[bool]string{true: "r1", false: "r2"}[e.placement("pair").nodes[e.nodeName("a0")] == 1]

	e.createGang(prioritizedGang("urgent", 2, high, required(rackKey)))
	p := e.waitBound("urgent", 2)
	onlyOn(t, p, e.nodesWithLabel(rackKey, pairRack), "the preemptor")
	assert.Empty(t, e.pods("pair"), "the pair gang was evicted whole")
	if e.placement("one").total() != 1 {
		list, _ := e.admin.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
		for _, ev := range list.Items {
			t.Logf("event %s on %s/%s: %s", ev.Reason, ev.Regarding.Kind, ev.Regarding.Name, ev.Note)
		}
	}
	assert.Equal(t, 1, e.placement("one").total(), "gangs outside the chosen rack stay")
	assert.Equal(t, 1, e.placement("two").total(), "gangs outside the chosen rack stay")

	cond := apimeta.FindStatusCondition(e.podGang("pair").Status.Conditions, v1alpha1.PodGangConditionDisruptionTarget)
	require.NotNil(t, cond, "the victim PodGang says it was preempted")
	assert.Equal(t, common.ReasonPreempted, cond.Reason)
	assert.Contains(t, cond.Message, "PodGang "+e.ns+"/urgent")
	e.eventually("a Preempted event on the victim PodGang", func() (bool, string) {
		evs := e.gangEvents("pair", common.EventReasonPreempted)
		return len(evs) > 0, fmt.Sprintf("%d events", len(evs))
	})
}

// Pods outside gangs keep DefaultPreemption against each other: a high-priority pod evicts the
// low-priority plain pod, never a member of the gang next to it.
func TestPlainPodPreemptsPlainPodsBeforeAnyGang(t *testing.T) {
	e := newEnv(t, envOptions{})
	low, high := e.priorityClass("low", 100), e.priorityClass("high", 1000)
	e.addNodes(node{name: "n0", cpu: "1"}, node{name: "n1", cpu: "1"}, node{name: "n2", cpu: "1"})
	e.createGang(prioritizedGang("gang", 2, low, nil))
	e.waitBound("gang", 2)
	e.plainPod("filler", low)
	e.waitPodBound("filler")

	e.plainPod("urgent", high)
	e.waitPodBound("urgent")
	_, err := e.admin.CoreV1().Pods(e.ns).Get(e.ctx, "filler", metav1.GetOptions{})
	assert.True(t, err != nil, "the plain low-priority pod made room")
	assert.Equal(t, 2, e.placement("gang").total(), "the gang keeps every member")
}

// Equal priority preempts nothing: the newcomer waits whole and says why.
func TestEqualPriorityGangWaitsAndEvictsNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	low := e.priorityClass("low", 100)
	e.addNodes(node{name: "n0", cpu: "1"}, node{name: "n1", cpu: "1"})
	e.createGang(prioritizedGang("first", 2, low, nil))
	e.waitBound("first", 2)
	e.createGang(prioritizedGang("second", 2, low, nil))
	e.waitScheduledCondition("second", metav1.ConditionFalse, "fit")
	assert.Equal(t, 2, e.placement("first").total())
	assert.Equal(t, 0, e.placement("second").total())
	assert.Empty(t, e.gangEvents("first", common.EventReasonPreempted))
}

// A scaled PodGang whose PodCliqueSet replica shares one rack preempts inside the rack its base
// PodGang pinned, although a cheaper victim sits in the other rack: evicting that one would not
// let it in.
func TestGangPreemptsInsideTheRackItsReplicaShares(t *testing.T) {
	e := newEnv(t, envOptions{})
	lowest, low, high := e.priorityClass("lowest", 100), e.priorityClass("low", 200), e.priorityClass("high", 1000)
	e.addNodes(rack("a0", "1", "r1"), rack("a1", "1", "r1"), rack("a2", "1", "r1"), rack("b0", "1", "r2"), rack("b1", "1", "r2"))
	shared := &v1alpha1.SharedTopologyConstraint{Group: "replica", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(rackKey)}}
	inRack := func(class, r string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.PriorityClassName = class
			p.Spec.NodeSelector = map[string]string{rackKey: r}
		}
	}
	e.createGang(gang{name: "base", shared: shared, groups: []group{{name: "w", min: 1, replicas: 1, cpu: "1", pod: inRack(high, "r1")}}})
	e.waitBound("base", 1)
	e.createGang(gang{name: "r1-low", groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1", pod: inRack(low, "r1")}}})
	e.createGang(gang{name: "r2-lowest", groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1", pod: inRack(lowest, "r2")}}})
	e.waitBound("r1-low", 2)
	e.waitBound("r2-lowest", 2)

	e.createGang(gang{name: "scaled", shared: shared, groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1", pod: withPriority(high)}}})
	p := e.waitBound("scaled", 2)
	onlyOn(t, p, e.nodesWithLabel(rackKey, "r1"), "the preemptor")
	assert.Empty(t, e.pods("r1-low"), "the gang in the shared rack was evicted whole")
	assert.Equal(t, 2, e.placement("r2-lowest").total(), "the cheaper gang in the other rack stays")
}
