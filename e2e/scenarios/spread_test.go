//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// withReplicaSpread packs each replica into one rack and spreads the replicas over racks.
func withReplicaSpread(p *corev1alpha1.PodCliqueSet, spread corev1alpha1.ReplicaSpreadConstraint) *corev1alpha1.PodCliqueSet {
	p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack",
		ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{spread}}
	return p
}

// spreadRacks maps each PodCliqueSet replica with bound pods to the racks of those pods.
func spreadRacks(t *testing.T, env *framework.Env, ns, name string) map[string][]string {
	t.Helper()
	byReplica := map[string]map[string]int{}
	for _, p := range podsOf(t, env, ns, name) {
		r := p.Labels[common.LabelPodCliqueSetReplicaIndex]
		racks := labelsOfBoundPods(env, []corev1.Pod{p}, framework.RackKey)
		for rack := range racks {
			if byReplica[r] == nil {
				byReplica[r] = map[string]int{}
			}
			byReplica[r][rack]++
		}
	}
	out := map[string][]string{}
	for r, racks := range byReplica {
		for rack := range racks {
			out[r] = append(out[r], rack)
		}
		sort.Strings(out[r])
	}
	return out
}

// Required replica spread: 4 racks of 2 two-CPU hosts, 5 replicas of 2 one-CPU pods, each
// replica packed in one rack and no two in the same rack. Four replicas take one rack each;
// the fifth (whichever comes last) waits, saying why (ReplicaSpreadUnsatisfiable), although
// every rack has room for it. A new rack opens: the fifth lands there, and nowhere else.
func TestRequiredReplicaSpread(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	p := withReplicaSpread(pcs(ns, "spread", 5, clique("w", 2, "1")), corev1alpha1.ReplicaSpreadConstraint{Domain: "rack"})
	require.NoError(t, env.Client.Create(ctx, p))

	waiting := ""
	require.Eventually(t, func() bool {
		waiting = ""
		for replica := range 5 {
			c := apimeta.FindStatusCondition(podGang(env, ns, "spread-"+itoa(replica)).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
			if c == nil {
				return false
			}
			if c.Status == "False" && c.Reason == common.ReasonReplicaSpreadUnsatisfiable {
				waiting = itoa(replica)
			}
		}
		return waiting != "" && countBound(podsOf(t, env, ns, "spread")) == 8
	}, 2*time.Minute, 500*time.Millisecond, fmt.Sprintf("racks by replica %v", spreadRacks(t, env, ns, "spread")))
	c := apimeta.FindStatusCondition(podGang(env, ns, "spread-"+waiting).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
	assert.Contains(t, c.Message, "within a domain of its own: no rack ("+framework.RackKey+") that holds it is free of the other replicas")

	placed := spreadRacks(t, env, ns, "spread")
	used := map[string]string{}
	for replica, racks := range placed {
		require.Len(t, racks, 1, "replica %s must be packed in one rack: %v", replica, placed)
		other, taken := used[racks[0]]
		assert.False(t, taken, "replicas %s and %s share rack %s", other, replica, racks[0])
		used[racks[0]] = replica
	}
	assert.ElementsMatch(t, []string{"z0-b0-r0", "z0-b0-r1", "z0-b1-r0", "z0-b1-r1"}, keysOf(used), "one replica per rack: %v", placed)
	assert.Empty(t, placed[waiting], "the waiting replica binds nothing")

	// A fifth rack: the waiting replica lands in it.
	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 2, Prefix: "new"}, twoCPUNode)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "spread")) == 10 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "spread", "spread-"+waiting))
	assert.Equal(t, []string{"new-z0-b0-r0"}, spreadRacks(t, env, ns, "spread")[waiting])
	w.assertNoPartialGang()
}

// Preferred replica spread with racks short: 4 racks that each hold two replicas, 6 replicas.
// Packing alone would fill three racks and leave one empty; the spread puts one replica in
// every rack first and then shares, so two racks hold two replicas and two hold one.
func TestPreferredReplicaSpreadSharesWhenRacksAreShort(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	p := withReplicaSpread(pcs(ns, "soft", 6, clique("w", 2, "1")), corev1alpha1.ReplicaSpreadConstraint{
		Domain: "rack", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway, MaxSkew: ptr.To[int32](1)})
	require.NoError(t, env.Client.Create(ctx, p))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "soft")) == 12 }, 2*time.Minute, 500*time.Millisecond)

	perRack := map[string]int{}
	for replica, racks := range spreadRacks(t, env, ns, "soft") {
		require.Len(t, racks, 1, "replica %s must be packed in one rack", replica)
		perRack[racks[0]]++
	}
	counts := make([]int, 0, len(perRack))
	for _, n := range perRack {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	assert.Equal(t, []int{1, 1, 2, 2}, counts, "replicas per rack: %v", perRack)
	w.assertNoPartialGang()
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A lost rack does not break a required spread: four one-pod replicas spread over four racks
// (no pack constraint), every rack with a host to spare. Replica 0's rack goes (its nodes and,
// as the pod garbage collector would, their pods): the replacement pod may not join another
// replica's rack although each has room, so it waits, saying why, until a new rack appears.
func TestRequiredReplicaSpreadSurvivesRackLoss(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	p := pcs(ns, "ha", 4, clique("w", 1, "2"))
	p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric",
		ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{{Domain: "rack"}}}
	require.NoError(t, env.Client.Create(ctx, p))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "ha")) == 4 }, 2*time.Minute, 500*time.Millisecond)
	before := spreadRacks(t, env, ns, "ha")
	racks := map[string]bool{}
	for _, r := range before {
		require.Len(t, r, 1)
		racks[r[0]] = true
	}
	require.Len(t, racks, 4, "one replica per rack: %v", before)

	lost := before["0"][0]
	var nodes corev1.NodeList
	require.NoError(t, env.Client.List(ctx, &nodes, client.MatchingLabels{framework.RackKey: lost}))
	require.Len(t, nodes.Items, 2)
	for i := range nodes.Items {
		require.NoError(t, env.Client.Delete(ctx, &nodes.Items[i]))
	}
	for _, pod := range podsOf(t, env, ns, "ha") {
		if pod.Labels[common.LabelPodCliqueSetReplicaIndex] == "0" {
			require.NoError(t, env.Client.Delete(ctx, &pod, client.GracePeriodSeconds(0)))
		}
	}
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, "ha-0").Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && c.Status == "False" && c.Reason == common.ReasonReplicaSpreadUnsatisfiable && len(podsOf(t, env, ns, "ha")) == 4
	}, 2*time.Minute, 500*time.Millisecond, describe(env, ns, "ha", "ha-0"))
	assert.Equal(t, 3, countBound(podsOf(t, env, ns, "ha")), "the replacement binds nowhere")
	for replica, r := range spreadRacks(t, env, ns, "ha") {
		assert.Equal(t, before[replica], r, "replica %s stays where it was", replica)
	}

	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 1, Prefix: "new"}, twoCPUNode)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "ha")) == 4 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "ha", "ha-0"))
	assert.Equal(t, []string{"new-z0-b0-r0"}, spreadRacks(t, env, ns, "ha")["0"])
	w.assertNoPartialGang()
}
