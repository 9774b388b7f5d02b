//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// partialBindingTimeout is the operator's podGang.partialBindingTimeout in this scenario.
const partialBindingTimeout = 10 * time.Second

// Partly bound gangs are made whole-or-nothing again. grove-scheduler is down while two gangs
// of three one-CPU pods are left as a crash mid-binding leaves them: gang a with two members
// bound, gang b with one member bound and one bound to a node that is then lost (the node and
// its pod go away; the replacement stays unbound). While the scheduler is down, pods created
// with nodeName take every other node. Restarted, the scheduler cannot complete either gang;
// within partialBindingTimeout (and a reconcile) the operator releases their bound members, so
// no gang stays partly bound, and once the capacity is freed both gangs are placed whole.
func TestPartialGangsReleasedAfterSchedulerCrash(t *testing.T) {
	env, _, ns := nodesEnv(t, framework.Options{OperatorConfig: func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.PodGang.PartialBindingTimeout = metav1.Duration{Duration: partialBindingTimeout}
	}}, 6, oneCPUNode)
	ctx := context.Background()
	require.NoError(t, env.Scheduler.Kill())
	createNodes(t, env, "lost", 1, oneCPUNode, nil)

	gangs := map[string]string{"a": common.BasePodGangName("a", 0), "b": common.BasePodGangName("b", 0)}
	for name := range gangs {
		require.NoError(t, env.Client.Create(ctx, pcs(ns, name, 1, clique("w", 3, "1"))))
	}
	a, b := ungated(t, env, ns, "a", 3), ungated(t, env, ns, "b", 3)
	bindPod(t, env, &a[0], "n-0")
	bindPod(t, env, &a[1], "n-1")
	bindPod(t, env, &b[0], "n-2")
	bindPod(t, env, &b[1], "lost-0")
	// The node is lost mid-binding: it goes, and its pod with it (as the pod garbage collector
	// would remove it; a node that is gone confirms no graceful deletion).
	require.NoError(t, env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lost-0"}}))
	require.NoError(t, env.Client.Delete(ctx, &b[1], client.GracePeriodSeconds(0)))
	for i := 3; i < 6; i++ {
		hog(t, env, ns, fmt.Sprintf("hog-%d", i), fmt.Sprintf("n-%d", i))
	}
	require.NoError(t, env.StartScheduler(ctx))

	// Both gangs are released, bound members first deleted, and none stays partly bound.
	released := func(gang string) bool {
		cond := apimeta.FindStatusCondition(podGang(env, ns, gang).Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
		return cond != nil && cond.Reason == common.ReasonPartialGangReleased
	}
	if !assert.Eventually(t, func() bool {
		for name, gang := range gangs {
			if n := countBound(podsOf(t, env, ns, name)); !released(gang) || n != 0 && n != 3 {
				return false
			}
		}
		return true
	}, partialBindingTimeout+time.Minute, 250*time.Millisecond, "a gang stayed partly bound") {
		t.Fatal(describe(env, ns, "a", gangs["a"]) + describe(env, ns, "b", gangs["b"]))
	}
	live := map[string]bool{}
	for name := range gangs {
		for _, p := range livePods(podsOf(t, env, ns, name)) {
			live[string(p.UID)] = true
		}
	}
	for _, p := range []corev1.Pod{a[0], a[1], b[0]} {
		assert.False(t, live[string(p.UID)], "%s, bound when the gang was released, was deleted", p.Name)
	}
	assert.True(t, partialGangEvents(t, env, ns) >= 2, "each release is told by an event")

	// From here on, no gang may be partly bound longer than a barrier's release takes.
	w := watchGangs(t, env)
	defer w.stop()
	for i := 3; i < 6; i++ {
		require.NoError(t, env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("hog-%d", i)}}))
	}
	for name := range gangs {
		waitPods(t, env, ns, name, 3)
	}
	waitScheduled(t, env, ns, gangs["a"], gangs["b"])
	w.assertNoPartialGang()
}

// ungated waits until the PodCliqueSet has n live pods, all without scheduling gates.
func ungated(t *testing.T, env *framework.Env, ns, pcsName string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		pods = livePods(podsOf(t, env, ns, pcsName))
		if len(pods) != n {
			return false
		}
		for _, p := range pods {
			if len(p.Spec.SchedulingGates) > 0 {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "%s never had %d ungated pods", pcsName, n)
	return pods
}

// bindPod binds a pod the way a scheduler does, through the binding subresource.
func bindPod(t *testing.T, env *framework.Env, pod *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	require.NoError(t, env.Client.SubResource("binding").Create(context.Background(), pod, b))
}

// hog takes a one-CPU node with a pod that names it (no scheduler involved).
func hog(t *testing.T, env *framework.Env, ns, name, node string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: podSpec("1")}
	p.Spec.NodeName = node
	require.NoError(t, env.Client.Create(context.Background(), p))
}

// partialGangEvents counts the events of released partly bound gangs in a namespace.
func partialGangEvents(t *testing.T, env *framework.Env, ns string) int {
	t.Helper()
	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), events, client.InNamespace(ns)))
	n := 0
	for _, ev := range events.Items {
		if ev.Reason == common.ReasonPartialGangReleased {
			n++
		}
	}
	return n
}
