//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// settleWindow is how long a bound count must hold once reached: long enough for the
// scheduler to act on every event the last step caused.
const settleWindow = 8 * time.Second

// boundByGang counts the PodCliqueSet's bound pods per PodGang.
func boundByGang(t *testing.T, env *framework.Env, ns, pcsName string) map[string]int {
	out := map[string]int{}
	for _, p := range podsOf(t, env, ns, pcsName) {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out[p.Labels[common.LabelPodGang]]++
		}
	}
	return out
}

func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// expectBound waits until the PodCliqueSet has exactly want bound pods per PodGang (gangs not
// named have none), then checks that no pod binds or goes for the settle window.
func expectBound(t *testing.T, env *framework.Env, ns, pcsName, step string, want map[string]int) {
	t.Helper()
	matches := func() (bool, string) {
		got := boundByGang(t, env, ns, pcsName)
		for k, v := range want {
			if v == 0 {
				delete(want, k)
			}
		}
		return describeCounts(got) == describeCounts(want), describeCounts(got)
	}
	var last string
	if !assert.Eventually(t, func() bool { ok, s := matches(); last = s; return ok }, 3*time.Minute, 250*time.Millisecond) {
		t.Fatalf("%s: want bound %s, have %s\n%s", step, describeCounts(want), last, dumpState(t, env, ns, pcsName))
	}
	for end := time.Now().Add(settleWindow); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if ok, s := matches(); !ok {
			t.Fatalf("%s: the bound count did not hold: want %s, have %s", step, describeCounts(want), s)
		}
	}
}

// wl2 is upstream Grove's e2e workload WL2 on one-CPU pods: a standalone clique pc-a (2 pods,
// minAvailable 1) and a scaling group sg-x of {pc-b (1 pod), pc-c (3 pods, minAvailable 1)}
// with 2 replicas, minAvailable 1. A replica has 10 pods; its base PodGang needs 3 (pc-a,
// sg-x-0's pc-b and pc-c), each scaled PodGang 2.
func wl2(ns, name string, replicas int32) *corev1alpha1.PodCliqueSet {
	return withGroup(pcs(ns, name, replicas, clique("pc-a", 2, "1", minAvailable(1)), clique("pc-b", 1, "1"),
		clique("pc-c", 3, "1", minAvailable(1))), "sg-x", 2, 1, "pc-b", "pc-c")
}

// Quorums before elastic pods (upstream's GS-8): the scaling group is scaled to 3 before there
// is room, then nodes come in steps; the quorums of all three PodGangs (3 + 2 + 2) are placed
// before any pod beyond a PodGroup's minReplicas.
func TestQuorumsBeforeElasticPods(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 2, oneCPUNode)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, wl2(ns, "wl2", 1)))
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "wl2")) == 10 }, 2*time.Minute, 250*time.Millisecond)
	pcsg := common.PodCliqueScalingGroupName("wl2", 0, "sg-x")
	scaleTo(t, env, pcsgRef(ns, pcsg), 3)
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "wl2")) == 14 }, 2*time.Minute, 250*time.Millisecond)
	base, sg1, sg2 := common.BasePodGangName("wl2", 0), common.ScaledPodGangName(pcsg, 1, 1), common.ScaledPodGangName(pcsg, 2, 1)

	// 2 nodes: the base quorum needs 3, the scaled gangs wait for the base gang.
	expectBound(t, env, ns, "wl2", "2 nodes", map[string]int{})
	// 3 nodes: the base quorum.
	createNodes(t, env, "step3", 1, oneCPUNode, nil)
	expectBound(t, env, ns, "wl2", "3 nodes", map[string]int{base: 3})
	// 7 nodes: both scaled quorums, not the base gang's 3 elastic pods.
	createNodes(t, env, "step7", 4, oneCPUNode, nil)
	expectBound(t, env, ns, "wl2", "7 nodes", map[string]int{base: 3, sg1: 2, sg2: 2})
	// 14 nodes: every pod.
	createNodes(t, env, "step14", 7, oneCPUNode, nil)
	expectBound(t, env, ns, "wl2", "14 nodes", map[string]int{base: 6, sg1: 4, sg2: 4})
	w.assertNoPartialGang()
}

// Quorums before elastic pods across PodCliqueSet replicas: two replicas of WL2, both scaling
// groups scaled to 3 before the cluster has any node; 6 nodes hold both base quorums (3 + 3),
// not one base gang with its elastic pods or its scaled gangs (upstream's GS-12).
func TestBaseQuorumsOfEveryReplicaBeforeElasticPods(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 0, oneCPUNode)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, wl2(ns, "two", 2)))
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "two")) == 20 }, 2*time.Minute, 250*time.Millisecond)
	var scaled []string
	for r := range 2 {
		pcsg := common.PodCliqueScalingGroupName("two", r, "sg-x")
		scaleTo(t, env, pcsgRef(ns, pcsg), 3)
		scaled = append(scaled, common.ScaledPodGangName(pcsg, 1, 1), common.ScaledPodGangName(pcsg, 2, 1))
	}
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "two")) == 28 }, 2*time.Minute, 250*time.Millisecond)
	base0, base1 := common.BasePodGangName("two", 0), common.BasePodGangName("two", 1)
	// Upstream's GS-12 has every pod pending before the first node: both base quorums are in the
	// scheduling queue (their PodGangs exist, their pods ungated) when room appears.
	require.Eventually(t, func() bool {
		for _, p := range podsOf(t, env, ns, "two") {
			if g := p.Labels[common.LabelPodGang]; (g == base0 || g == base1) && len(p.Spec.SchedulingGates) > 0 {
				return false
			}
		}
		return podGang(env, ns, base0).Name != "" && podGang(env, ns, base1).Name != ""
	}, 2*time.Minute, 250*time.Millisecond)

	createNodes(t, env, "first", 6, oneCPUNode, nil)
	expectBound(t, env, ns, "two", "6 nodes", map[string]int{base0: 3, base1: 3})
	// 8 more: the four scaled quorums.
	createNodes(t, env, "second", 8, oneCPUNode, nil)
	want := map[string]int{base0: 3, base1: 3}
	for _, g := range scaled {
		want[g] = 2
	}
	expectBound(t, env, ns, "two", "14 nodes", want)
	// 14 more: every pod.
	createNodes(t, env, "third", 14, oneCPUNode, nil)
	want = map[string]int{base0: 6, base1: 6}
	for _, g := range scaled {
		want[g] = 4
	}
	expectBound(t, env, ns, "two", "28 nodes", want)
	w.assertNoPartialGang()
}

// blockOfGang returns the blocks the PodGang's bound pods are in.
func blocksOfGang(t *testing.T, env *framework.Env, ns, pcsName, gang, key string) map[string]int {
	var pods []corev1.Pod
	for _, p := range podsOf(t, env, ns, pcsName) {
		if p.Labels[common.LabelPodGang] == gang {
			pods = append(pods, p)
		}
	}
	return labelsOfBoundPods(env, pods, key)
}

// A PodCliqueSet-level required block holds for the whole replica: the base PodGang and every
// scaled PodGang (each packed into a rack of its own, as its scaling group requires) land in
// the one block the base PodGang took, although another block would fit a scaled gang more
// tightly; once that block is full, a new scaled PodGang waits, saying which block it is held
// to, and never spills into the other block.
func TestPodCliqueSetRequiredDomainHoldsForTheWholeReplica(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ctx := context.Background()
	// Block a-z0-b0: one rack of 2 hosts (the tightest fit for a 2-pod gang). Block
	// b-z0-b0: two racks of 4 hosts. One pod per host.
	_, err := env.CreateNodes(ctx, framework.Fabric{Prefix: "a", Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 2}, oneCPUNode)
	require.NoError(t, err)
	_, err = env.CreateNodes(ctx, framework.Fabric{Prefix: "b", Zones: 1, BlocksPerZone: 1, RacksPerBlock: 2, HostsPerRack: 4}, oneCPUNode)
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	ns := env.Cluster.TestNamespace(t)

	// Base PodGang: lead + the group's replica 0 (2 workers in a rack) = 3 pods: only block b
	// holds it. Scaled PodGang 1: 2 workers in a rack.
	p := withTopology(withGroup(pcs(ns, "rep", 1, clique("lead", 1, "1"), clique("w", 2, "1")), "sg", 2, 1, "w"), "fabric", "block", "")
	group(p, "sg").TopologyConstraint = pack("", "rack", "")
	require.NoError(t, env.Client.Create(ctx, p))
	base := common.BasePodGangName("rep", 0)
	pcsg := common.PodCliqueScalingGroupName("rep", 0, "sg")
	sg1, sg2, sg3 := common.ScaledPodGangName(pcsg, 1, 1), common.ScaledPodGangName(pcsg, 2, 1), common.ScaledPodGangName(pcsg, 3, 1)
	expectBound(t, env, ns, "rep", "replica placed", map[string]int{base: 3, sg1: 2})
	const blockB = "b-z0-b0"
	assert.Equal(t, map[string]int{blockB: 3}, blocksOfGang(t, env, ns, "rep", base, framework.BlockKey))
	assert.Equal(t, map[string]int{blockB: 2}, blocksOfGang(t, env, ns, "rep", sg1, framework.BlockKey), "the scaled gang left the replica's block")
	assert.Len(t, blocksOfGang(t, env, ns, "rep", sg1, framework.RackKey), 1, "the scaled gang is packed into one rack")
	shared := podGang(env, ns, sg1).Spec.SharedTopologyConstraint
	require.NotNil(t, shared, "the scaled PodGang carries the replica's constraint")
	assert.Equal(t, base, shared.Group)
	assert.Equal(t, framework.BlockKey, shared.Required())

	// Scale out: the new gang follows the block too.
	scaleTo(t, env, pcsgRef(ns, pcsg), 3)
	expectBound(t, env, ns, "rep", "scaled to 3", map[string]int{base: 3, sg1: 2, sg2: 2})
	assert.Equal(t, map[string]int{blockB: 2}, blocksOfGang(t, env, ns, "rep", sg2, framework.BlockKey))

	// Block b has 1 free host left; block a has 2. The fourth gang waits for block b.
	scaleTo(t, env, pcsgRef(ns, pcsg), 4)
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, sg3).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && c.Status == "False" && strings.Contains(c.Message, fmt.Sprintf("block %q, where PodGang %s of its group was placed", blockB, base))
	}, 2*time.Minute, 250*time.Millisecond, "the waiting gang never named the block it is held to: %+v", podGang(env, ns, sg3).Status.Conditions)
	expectBound(t, env, ns, "rep", "scaled to 4", map[string]int{base: 3, sg1: 2, sg2: 2})
	w.assertNoPartialGang()
}
