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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func createNodes(t *testing.T, env *framework.Env, prefix string, n int, shape map[corev1.ResourceName]string, labels map[string]string) {
	t.Helper()
	for i := 0; i < n; i++ {
		node := cluster.FakeNode(fmt.Sprintf("%s-%d", prefix, i), labels, shape)
		require.NoError(t, env.Client.Create(context.Background(), node))
	}
}

// podGang reads a PodGang; an empty one when it does not exist (yet).
func podGang(env *framework.Env, ns, gang string) *schedv1alpha1.PodGang {
	pg := &schedv1alpha1.PodGang{}
	_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gang}, pg)
	return pg
}

func isScheduled(env *framework.Env, ns, gang string) bool {
	return apimeta.IsStatusConditionTrue(podGang(env, ns, gang).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
}

// waitScheduled waits until grove-scheduler reports every one of the PodGangs Scheduled.
func waitScheduled(t *testing.T, env *framework.Env, ns string, gangs ...string) {
	t.Helper()
	for _, g := range gangs {
		require.Eventually(t, func() bool { return isScheduled(env, ns, g) }, time.Minute, 250*time.Millisecond, "%s never Scheduled", g)
	}
}

// describe dumps a PodGang and its pods for a failure message.
func describe(env *framework.Env, ns, pcsName, gang string) string {
	pg := podGang(env, ns, gang)
	out := fmt.Sprintf("PodGang %s status=%+v\n", gang, pg.Status)
	var pods corev1.PodList
	_ = env.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{common.LabelPartOfKey: pcsName})
	for _, p := range pods.Items {
		out += fmt.Sprintf("pod %s node=%q gates=%v scheduler=%s conds=%v\n", p.Name, p.Spec.NodeName, p.Spec.SchedulingGates, p.Spec.SchedulerName, p.Status.Conditions)
	}
	return out
}

// A 10-pod gang on 9 one-pod nodes stays fully pending (and says why); a tenth node lets it
// bind completely.
func TestGangWaitsWholeUntilItFits(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 9, oneCPUNode)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, pcs(ns, "ten", 1, clique("w", 10, "1"))))

	gang := common.BasePodGangName("ten", 0)
	if !assert.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, gang).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && c.Status == "False" && c.Message != ""
	}, 2*time.Minute, 500*time.Millisecond, "the PodGang never said why it is pending") {
		t.Fatal(describe(env, ns, "ten", gang))
	}
	pods := podsOf(t, env, ns, "ten")
	require.Len(t, pods, 10)
	require.Equal(t, 0, countBound(pods), "a gang that does not fit must bind nothing")

	createNodes(t, env, "extra", 1, oneCPUNode, nil)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "ten")) == 10 }, 2*time.Minute, 500*time.Millisecond)
	waitScheduled(t, env, ns, gang)
	w.assertNoPartialGang()
}

// With scaling-group minAvailable below replicas only the base gang must land; scaled gangs
// are separate, whole gangs placed after it.
func TestBaseGangFirstThenScaledGangs(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 4, oneCPUNode)
	ctx := context.Background()
	p := withGroup(pcs(ns, "svc", 1, clique("router", 1, "1"), clique("worker", 2, "1")), "workers", 3, 1, "worker")
	require.NoError(t, env.Client.Create(ctx, p))

	base := common.BasePodGangName("svc", 0)
	pcsg := common.PodCliqueScalingGroupName("svc", 0, "workers")
	scaled := []string{common.ScaledPodGangName(pcsg, 1, 1), common.ScaledPodGangName(pcsg, 2, 1)}
	// Base gang: router + workers replica 0 = 3 pods on 4 nodes. One node is left: no scaled
	// gang (2 pods each) fits, so exactly 3 pods are bound.
	require.Eventually(t, func() bool {
		pods := podsOf(t, env, ns, "svc")
		return len(pods) == 7 && countBound(pods) == 3
	}, 2*time.Minute, 500*time.Millisecond)
	for _, pod := range podsOf(t, env, ns, "svc") {
		if pod.Spec.NodeName != "" {
			assert.Equal(t, base, pod.Labels[common.LabelPodGang], "pod %s of a scaled gang bound before room existed for it", pod.Name)
		}
	}
	// Room for both scaled gangs: every pod binds, the scaled gangs after the base gang.
	createNodes(t, env, "more", 4, oneCPUNode, nil)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "svc")) == 7 }, 2*time.Minute, 500*time.Millisecond)
	waitScheduled(t, env, ns, append([]string{base}, scaled...)...)

	// Scale the group out: a new scaled PodGang appears and is placed whole.
	scaleTo(t, env, pcsgRef(ns, pcsg), 4)
	createNodes(t, env, "last", 2, oneCPUNode, nil)
	require.Eventually(t, func() bool {
		pods := podsOf(t, env, ns, "svc")
		return len(pods) == 9 && countBound(pods) == 9
	}, 2*time.Minute, 500*time.Millisecond)
	assert.Len(t, podGang(env, ns, common.ScaledPodGangName(pcsg, 3, 1)).Spec.PodGroups, 1)
	w.assertNoPartialGang()
}

// With room for everything from the start, a replica's scaled PodGangs are still placed after
// its base PodGang: grove-scheduler holds their pods until the base gang is scheduled, so in the
// API's order of bindings every base pod comes before any scaled pod.
func TestScaledGangsBindAfterTheBaseGang(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 7, oneCPUNode)
	ctx := context.Background()
	p := withGroup(pcs(ns, "roomy", 1, clique("router", 1, "1"), clique("worker", 2, "1")), "workers", 3, 1, "worker")
	require.NoError(t, env.Client.Create(ctx, p))
	base := common.BasePodGangName("roomy", 0)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "roomy")) == 7 }, 2*time.Minute, 500*time.Millisecond)

	order := w.bindingsIn(ns)
	require.Len(t, order, 7)
	// Base gang: router + workers replica 0 (3 pods); then two scaled gangs of 2.
	assert.Equal(t, []string{base, base, base}, order[:3], "binding order %v", order)
	for _, gang := range order[3:] {
		assert.NotEqual(t, base, gang, "binding order %v", order)
	}
	w.assertNoPartialGang()
}
