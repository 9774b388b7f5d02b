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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// rackOf maps each PodCliqueSet replica to the racks its bound pods are on.
func racksByReplica(env *framework.Env, pods []corev1.Pod) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, p := range pods {
		r := p.Labels[common.LabelPodCliqueSetReplicaIndex]
		for rack, n := range labelsOfBoundPods(env, []corev1.Pod{p}, framework.RackKey) {
			if out[r] == nil {
				out[r] = map[string]int{}
			}
			out[r][rack] += n
		}
	}
	return out
}

// waitUpdateEnded waits until the PodCliqueSet reports its update over with every replica updated.
func waitUpdateEnded(t *testing.T, env *framework.Env, ns, name string, replicas int32) {
	t.Helper()
	cur := &corev1alpha1.PodCliqueSet{}
	if !assert.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cur))
		up := cur.Status.UpdateProgress
		return cur.Status.UpdatedReplicas == replicas && up != nil && up.UpdateEndedAt != nil && up.CurrentlyUpdating == nil
	}, 3*time.Minute, 250*time.Millisecond, "the update of %s never finished", name) {
		t.Fatal(dumpState(t, env, ns, name))
	}
}

// A rollout on a full cluster keeps each replica in its rack. Racks ra, rb and rc have two
// one-pod nodes each; a blocker takes ra, the two replicas of "serve" (two pods, one rack) take
// rb and rc, and then the blocker goes. A Coherent update deletes a whole replica at once, so its
// new PodGang holds no node: ra and its own rack are then equally tight and ra sorts first, so a
// gang placed from scratch would move. Every new gang must land in its predecessor's rack.
func TestRolloutOnAFullClusterKeepsEachReplicaInItsRack(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ns := env.Cluster.TestNamespace(t)
	ctx := context.Background()
	fabricTopology(t, env, "fabric")
	rack := func(name string) []string {
		var nodes []cordonedNode
		for h := range 2 {
			nodes = append(nodes, cordonedNode{name: fmt.Sprintf("%s-h%d", name, h),
				labels: map[string]string{framework.ZoneKey: "z0", framework.BlockKey: "z0-b0", framework.RackKey: name}})
		}
		return createCordoned(t, env, nodes...)
	}
	ra, rb, rc := rack("ra"), rack("rb"), rack("rc")
	uncordon(t, env, ra...)
	blocker := forWorkload(withTopology(pcs(ns, "blocker", 1, clique("w", 2, "1")), "fabric", "rack", ""), "80Mi")
	require.NoError(t, env.Client.Create(ctx, blocker))
	holdBoundBriefly(t, env, ns, "blocker", 2)
	uncordon(t, env, append(rb, rc...)...)

	serve := forWorkload(withTopology(pcs(ns, "serve", 2, clique("w", 2, "1")), "fabric", "rack", ""), "80Mi")
	serve.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.CoherentStrategy}
	require.NoError(t, env.Client.Create(ctx, serve))
	holdBoundBriefly(t, env, ns, "serve", 4)
	before := racksByReplica(env, livePods(podsOf(t, env, ns, "serve")))
	require.Len(t, before, 2)
	for r, racks := range before {
		require.Len(t, racks, 1, "replica %s in one rack: %v", r, racks)
	}
	require.NoError(t, env.Client.Delete(ctx, blocker))
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "blocker")) == 0 }, time.Minute, 250*time.Millisecond)

	updatePCS(t, env, ns, "serve", func(p *corev1alpha1.PodCliqueSet) {
		for _, c := range p.Spec.Template.Cliques {
			c.Labels = map[string]string{"version": "v2"}
		}
	})
	waitUpdateEnded(t, env, ns, "serve", 2)
	pods := waitPods(t, env, ns, "serve", 4, func(p corev1.Pod) bool { return p.Labels["version"] == "v2" && p.Spec.NodeName != "" })
	assert.Equal(t, before, racksByReplica(env, pods), "every new gang in its predecessor's rack\n%s", dumpGangs(t, env, ns, "serve"))
	for _, g := range []string{common.BasePodGangName("serve", 0), common.BasePodGangName("serve", 1)} {
		pg := podGang(env, ns, g)
		assert.Equal(t, 1.0, ptr.Deref(pg.Status.PlacementScore, 0), "%s keeps its placement score", g)
	}
	w.assertNoPartialGang()
}

// holdBoundBriefly waits until want pods of the PodCliqueSet exist and are bound.
func holdBoundBriefly(t *testing.T, env *framework.Env, ns, name string, want int) {
	t.Helper()
	if !assert.Eventually(t, func() bool {
		pods := livePods(podsOf(t, env, ns, name))
		return len(pods) == want && countBound(pods) == want
	}, 2*time.Minute, 250*time.Millisecond, "%d bound pods of %s", want, name) {
		t.Fatal(dumpGangs(t, env, ns, name))
	}
}

// A stuck rollout: the new template's pods fit no node, so no new pod becomes ready (kwok has
// no image pulls to fail; a container failure there is reported once, after the pod was Ready,
// which the update rightly counts as progress). With
// maxUnavailable 1 the update replaces one pod and waits; after progressDeadline the
// UpdateInProgress condition turns Unknown with reason ProgressDeadlineExceeded, and nothing
// else is torn down: the other old pods stay, and no further pod is deleted while the condition
// says so.
func TestStuckRolloutHitsItsProgressDeadline(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 4, twoCPUNode)
	ctx := context.Background()
	const deadline = 5 * time.Second
	p := pcs(ns, "stuck", 1, clique("w", 3, "1"))
	p.Spec.Template.Cliques[0].RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{ProgressDeadline: &metav1.Duration{Duration: deadline}}
	require.NoError(t, env.Client.Create(ctx, p))
	old := uidsWhere(waitPods(t, env, ns, "stuck", 3, isReadyPod), func(map[string]string) bool { return true })
	mark := len(w.deletionsIn(ns))

	updatePCS(t, env, ns, "stuck", func(p *corev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[0].Spec.PodSpec.NodeSelector = map[string]string{"grove.io/e2e-nowhere": "true"}
	})
	var cond *metav1.Condition
	if !assert.Eventually(t, func() bool {
		cur := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stuck"}, cur))
		cond = apimeta.FindStatusCondition(cur.Status.Conditions, common.ConditionUpdateInProgress)
		return cond != nil && cond.Status == metav1.ConditionUnknown && cond.Reason == common.ReasonProgressDeadlineExceeded
	}, 2*time.Minute, 250*time.Millisecond, "UpdateInProgress never said ProgressDeadlineExceeded") {
		t.Fatalf("condition %+v\n%s", cond, dumpState(t, env, ns, "stuck"))
	}
	assert.Contains(t, cond.Message, "1 of 1 PodCliques being updated passed their progressDeadline (stuck-0-w)")
	// Nothing else goes while the update is stuck: one old pod was replaced, the other two stay
	// (a failed new pod may be recreated: it is of the new template).
	oldDeleted := func() int {
		n := 0
		for _, d := range w.deletionsIn(ns)[mark:] {
			if old[d.pod.Name] == d.pod.UID {
				n++
			}
		}
		return n
	}
	stillOld := func() int {
		n := 0
		for _, p := range livePods(podsOf(t, env, ns, "stuck")) {
			if old[p.Name] == p.UID {
				n++
			}
		}
		return n
	}
	assert.Never(t, func() bool { return stillOld() != 2 || oldDeleted() != 1 },
		3*deadline, 250*time.Millisecond, "only the one old pod the budget allows was replaced")
	assert.Equal(t, 2, stillOld())
}

func isReadyPod(p corev1.Pod) bool { return isReady(&p) }
