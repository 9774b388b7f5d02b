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
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// nodeFailureGrace is the operator's nodeFailure.grace in this scenario.
const nodeFailureGrace = 5 * time.Second

// failNode makes a kwok node look like one whose kubelet died: kwok stops managing it (its
// annotation goes, so no heartbeat sets it Ready again), and it gets what the node lifecycle
// controller would give it: the unreachable taints and Ready Unknown. It returns when the node
// failed.
func failNode(t *testing.T, env *framework.Env, name string) time.Time {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		delete(n.Annotations, cluster.KwokNodeAnnotation)
		// The node lifecycle controller's taints (it does not run here): they keep the
		// scheduler off the node.
		n.Spec.Taints = append(n.Spec.Taints,
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(now)})
		return env.Client.Update(ctx, n)
	}))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
				n.Status.Conditions[i].LastTransitionTime, n.Status.Conditions[i].LastHeartbeatTime = now, now
			}
		}
		return env.Client.Status().Update(ctx, n)
	}))
	return now.Time
}

// rackNodes creates n one-CPU kwok nodes <rack>-0 ... in one rack of the fabric.
func rackNodes(t *testing.T, env *framework.Env, rack string, n int) {
	t.Helper()
	createNodes(t, env, rack, n, oneCPUNode, map[string]string{framework.ZoneKey: "z0", framework.BlockKey: "b0", framework.RackKey: rack})
}

// A failed node costs its pod, not the replica. A rack-packed gang of 4 one-CPU pods runs on 4
// of the 5 nodes of rack r0; rack r1 has 5 free nodes. One gang node's kubelet dies: once
// nodeFailure.grace has passed, its pod is force-deleted and recreated with its index, and the
// replacement lands on the spare node of r0, next to the others; the other 3 pods keep their
// UIDs and never restart. A second gang node fails when r0 has no room left and nothing can be
// preempted: the replacement waits (r1's free nodes are not in the gang's rack) while the
// other members keep running, for terminationDelay to decide.
func TestNodeFailureReplacesInDomain(t *testing.T) {
	env, _, ns := nodesEnv(t, framework.Options{OperatorConfig: func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.NodeFailure.Grace = metav1.Duration{Duration: nodeFailureGrace}
		cfg.NodeFailure.InitialBackOff = metav1.Duration{Duration: time.Second}
	}}, 0, oneCPUNode)
	pods, spare, kept := gangInRack(t, env, ns)
	victim := pods[0]

	failedAt := failNode(t, env, victim.Spec.NodeName)
	replacement := waitReplacement(t, env, ns, kept, victim, "the lost pod is never replaced")
	assert.Equal(t, spare, replacement.Spec.NodeName, "the replacement lands on the spare node of the gang's rack")
	assert.Equal(t, victim.Spec.Hostname, replacement.Spec.Hostname, "the replacement keeps the index")
	assert.False(t, replacement.CreationTimestamp.Time.Before(failedAt.Add(nodeFailureGrace)), "nothing is replaced inside the grace")
	t.Logf("node failed at %s; replacement created %s, ready at %s", failedAt.Format(time.RFC3339), replacement.CreationTimestamp.Format(time.RFC3339), readySince(&replacement))
	assertKept(t, env, ns, kept)
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(getPCS(t, env, ns, "nf").Status.Conditions, common.ConditionMemberReplacing)
		return c != nil && c.Reason == common.ReasonMembersReplaced
	}, time.Minute, 250*time.Millisecond, "MemberReplacing never says the replica is whole")

	// r0 is full now: the next replacement has nowhere to go in the gang's rack.
	kept[replacement.UID] = replacement.Name
	second := pods[1]
	delete(kept, second.UID)
	failNode(t, env, second.Spec.NodeName)
	var waiting corev1.Pod
	decided := func() bool {
		for _, p := range livePods(podsOf(t, env, ns, "nf")) {
			if _, ok := kept[p.UID]; !ok && p.UID != second.UID && (unschedulable(&p) || p.Spec.NodeName != "") {
				waiting = p
				return true
			}
		}
		return false
	}
	if !assert.Eventually(t, decided, 2*time.Minute, 250*time.Millisecond, "the second replacement is never tried by the scheduler") {
		for _, p := range livePods(podsOf(t, env, ns, "nf")) {
			t.Logf("pod %s node=%q conditions=%+v", p.Name, p.Spec.NodeName, p.Status.Conditions)
		}
		t.Logf("PodGang conditions: %+v", podGang(env, ns, common.BasePodGangName("nf", 0)).Status.Conditions)
		t.FailNow()
	}
	assert.Empty(t, waiting.Spec.NodeName, "the replacement does not leave the gang's rack")
	assertKept(t, env, ns, kept)
	assert.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(getPCS(t, env, ns, "nf").Status.Conditions, common.ConditionMemberReplacing)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, second.Spec.NodeName)
	}, time.Minute, 250*time.Millisecond, "MemberReplacing names the second failed node while its replacement waits")
	assertKept(t, env, ns, kept)
}

// A drained node costs its pod too, and nothing more: kubectl drain cordons the node and
// evicts the gang member on it; its PodClique recreates it with its index, grove-scheduler
// places it on the spare node of the gang's rack (not in the emptier rack r1, not on the
// cordoned node), and the other members keep running. A drain is Kubernetes' eviction, not a
// node failure: no node-failure replacement is counted against the replica's budget.
func TestDrainReplacesInDomain(t *testing.T) {
	env, _, ns := nodesEnv(t, framework.Options{}, 0, oneCPUNode)
	ctx := context.Background()
	pods, spare, kept := gangInRack(t, env, ns)
	victim := pods[0]

	// kubectl drain: cordon, then evict through the Eviction API.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: victim.Spec.NodeName}, n); err != nil {
			return err
		}
		n.Spec.Unschedulable = true
		return env.Client.Update(ctx, n)
	}))
	require.NoError(t, env.Client.SubResource("eviction").Create(ctx, &victim, &policyv1.Eviction{}))

	replacement := waitReplacement(t, env, ns, kept, victim, "the evicted pod is never replaced")
	assert.Equal(t, spare, replacement.Spec.NodeName, "the replacement lands on the spare node of the gang's rack")
	assert.Equal(t, victim.Spec.Hostname, replacement.Spec.Hostname, "the replacement keeps the index")
	assertKept(t, env, ns, kept)
	assert.Empty(t, getPCS(t, env, ns, "nf").Status.NodeFailures, "a drain is not a node failure")
}

// gangInRack places a one-replica PodCliqueSet "nf" of 4 one-CPU pods packed into rack r0 of
// 5 nodes, then adds an empty rack r1. It returns the pods, r0's node left free (where a
// replacement must land) and the pods other than the first by UID (those that must be kept).
func gangInRack(t *testing.T, env *framework.Env, ns string) ([]corev1.Pod, string, map[types.UID]string) {
	t.Helper()
	fabricTopology(t, env, "fabric")
	rackNodes(t, env, "r0", 5)
	require.NoError(t, env.Client.Create(context.Background(), withTopology(pcs(ns, "nf", 1, clique("w", 4, "1")), "fabric", "rack", "")))
	pods := waitPods(t, env, ns, "nf", 4, func(p corev1.Pod) bool { return p.Spec.NodeName != "" && isReady(&p) })
	rackNodes(t, env, "r1", 5)
	used := map[string]bool{}
	for _, p := range pods {
		used[p.Spec.NodeName] = true
	}
	spare := ""
	for i := range 5 {
		if n := fmt.Sprintf("r0-%d", i); !used[n] {
			spare = n
		}
	}
	require.NotEmpty(t, spare)
	kept := map[types.UID]string{}
	for _, p := range pods[1:] {
		kept[p.UID] = p.Name
	}
	return pods, spare, kept
}

// waitReplacement waits for a bound, Ready pod of "nf" that is neither kept nor the one it
// replaces.
func waitReplacement(t *testing.T, env *framework.Env, ns string, kept map[types.UID]string, replaced corev1.Pod, msg string) corev1.Pod {
	t.Helper()
	var replacement corev1.Pod
	require.Eventually(t, func() bool {
		for _, p := range livePods(podsOf(t, env, ns, "nf")) {
			if _, ok := kept[p.UID]; !ok && p.UID != replaced.UID && p.Spec.NodeName != "" && isReady(&p) {
				replacement = p
				return true
			}
		}
		return false
	}, 2*time.Minute, 250*time.Millisecond, msg)
	return replacement
}

// assertKept checks that every pod in kept is still there, running, never restarted.
func assertKept(t *testing.T, env *framework.Env, ns string, kept map[types.UID]string) {
	t.Helper()
	live := map[types.UID]corev1.Pod{}
	for _, p := range livePods(podsOf(t, env, ns, "nf")) {
		live[p.UID] = p
	}
	for uid, name := range kept {
		p, ok := live[uid]
		if assert.True(t, ok, "%s kept running", name) {
			assert.True(t, isReady(&p), "%s ready", name)
			for _, s := range p.Status.ContainerStatuses {
				assert.Zero(t, s.RestartCount, "%s never restarted", name)
			}
		}
	}
}

func readySince(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Format(time.RFC3339)
		}
	}
	return "-"
}

// unschedulable: the scheduler tried the pod and found no place (PodScheduled False).
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

func getPCS(t *testing.T, env *framework.Env, ns, name string) *corev1alpha1.PodCliqueSet {
	t.Helper()
	p := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p))
	return p
}
