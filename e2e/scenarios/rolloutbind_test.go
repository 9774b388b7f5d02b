//go:build e2e

package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// holdFinalizer keeps a deleted pod terminating (kwok removes deleted pods at once): old pods of
// a rollout that take their time to go, as real ones with a grace period do.
const holdFinalizer = "grove.io/e2e-hold"

func setHold(t *testing.T, env *framework.Env, pod corev1.Pod, hold bool) {
	t.Helper()
	patch := `{"metadata":{"finalizers":["` + holdFinalizer + `"]}}`
	if !hold {
		patch = `{"metadata":{"finalizers":null}}`
	}
	err := env.Client.Patch(context.Background(), &pod, client.RawPatch(types.MergePatchType, []byte(patch)))
	require.NoError(t, client.IgnoreNotFound(err))
}

// A rolling update's replacements bind while the pods they replace still terminate: those pods
// still occupy their nodes, but they hold no place in the PodGang the replacements share with
// them. Counted as its bound quorum, they made the replacements elastic pods of a placed gang,
// which wait behind any other quorum waiting for room — here a gang that fits the empty nodes
// but not the free room — until the old pods are gone (the rollout's binding stall, issue 41).
func TestReplacementsBindWhileTheirPredecessorsTerminate(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 2, twoCPUNode)
	ctx := context.Background()
	heldServePods(t, env, ns, "100m")

	// Two pods of 1950m on two nodes of 2 CPU, one of which serve's pods use: short of room.
	require.NoError(t, env.Client.Create(ctx, pcs(ns, "blocker", 1, clique("w", 2, "1950m"))))
	blocker := common.BasePodGangName("blocker", 0)
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, blocker).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && common.IsUnschedulable(c.Reason)
	}, time.Minute, 250*time.Millisecond, "the blocker waits for room")

	updatePCS(t, env, ns, "serve", v2)
	if !assert.Eventually(t, func() bool {
		pods := podsOf(t, env, ns, "serve")
		fresh := 0
		for _, p := range pods {
			if p.Labels["version"] == "v2" && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				fresh++
			}
		}
		return fresh == 2
	}, time.Minute, 250*time.Millisecond, "the replacements bind while their predecessors terminate") {
		t.Fatal(dumpGangs(t, env, ns, "serve"))
	}
	terminating := 0
	for _, p := range podsOf(t, env, ns, "serve") {
		if p.DeletionTimestamp != nil {
			terminating++
		}
	}
	assert.Equal(t, 2, terminating, "both old pods are still there, terminating")

	for _, p := range podsOf(t, env, ns, "serve") {
		setHold(t, env, p, false)
	}
	waitUpdateEnded(t, env, ns, "serve", 1)
	w.assertNoPartialGang()
}

// On a full cluster the replacement waits for the room of the pod it replaces (as a Deployment
// at maxSurge 0 does), and gets it as soon as that pod is gone: the deletion of a terminating
// member, which its gang no longer counted, is room for the gang's replacements, not a loss the
// gang must make up.
func TestReplacementGetsTheRoomOfItsPredecessorOnAFullCluster(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 1, twoCPUNode)
	ctx := context.Background()
	heldServePods(t, env, ns, "900m")

	updatePCS(t, env, ns, "serve", v2)
	var waiting corev1.Pod
	require.Eventually(t, func() bool {
		for _, p := range podsOf(t, env, ns, "serve") {
			if p.Labels["version"] == "v2" && p.Spec.NodeName == "" && podScheduledFalse(p) {
				waiting = p
				return true
			}
		}
		return false
	}, time.Minute, 250*time.Millisecond, "a replacement waits for room while its predecessor terminates")
	for _, p := range podsOf(t, env, ns, "serve") {
		if p.DeletionTimestamp != nil {
			setHold(t, env, p, false)
		}
	}
	if !assert.Eventually(t, func() bool {
		p := &corev1.Pod{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(&waiting), p) == nil && p.Spec.NodeName != ""
	}, 30*time.Second, 250*time.Millisecond, "the replacement binds once its predecessor is gone") {
		t.Fatal(dumpGangs(t, env, ns, "serve"))
	}
	for _, p := range podsOf(t, env, ns, "serve") {
		setHold(t, env, p, false)
	}
	waitUpdateEnded(t, env, ns, "serve", 1)
	w.assertNoPartialGang()
}

// podScheduledFalse: the scheduler tried the pod and found no room for it.
func podScheduledFalse(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

// heldServePods creates PodCliqueSet "serve" of two pods of cpu, waits until both are bound and
// holds them with a finalizer, so that once deleted they terminate until the test ends.
func heldServePods(t *testing.T, env *framework.Env, ns, cpu string) {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), pcs(ns, "serve", 1, clique("w", 2, cpu))))
	for _, p := range waitPods(t, env, ns, "serve", 2, func(p corev1.Pod) bool { return p.Spec.NodeName != "" }) {
		setHold(t, env, p, true)
	}
	t.Cleanup(func() {
		for _, p := range podsOf(t, env, ns, "serve") {
			setHold(t, env, p, false)
		}
	})
}
