//go:build e2e

package scenarios

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// decodeSpread is a PodCliqueSet of one replica: a standalone clique "fe" (one 1-CPU pod) and
// scaling group "decode" (replicas, minAvailable 2) of clique "worker" (two 1-CPU pods),
// each decode replica packed into one rack, the decode replicas spread over racks.
func decodeSpread(ns, name string, replicas int32, action corev1alpha1.SpreadAction) *corev1alpha1.PodCliqueSet {
	p := withGroup(pcs(ns, name, 1, clique("fe", 1, "1"), clique("worker", 2, "1")), "decode", replicas, 2, "worker")
	p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric"}
	p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{
		Pack:                     &corev1alpha1.TopologyPackConstraint{Required: "rack"},
		ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{{Domain: "rack", WhenUnsatisfiable: action}}}
	return p
}

// decodeRacks maps each decode replica (scaling-group replica index) with bound pods to the
// racks of those pods, and counts its bound pods.
func decodeRacks(t *testing.T, env *framework.Env, ns, name string) (map[string][]string, map[string]int) {
	t.Helper()
	racks, bound := map[string][]string{}, map[string]int{}
	for _, p := range podsOf(t, env, ns, name) {
		j, ok := p.Labels[common.LabelPodCliqueScalingGroupReplicaIndex]
		if !ok || p.Spec.NodeName == "" {
			continue
		}
		bound[j]++
		for rack := range labelsOfBoundPods(env, []corev1.Pod{p}, framework.RackKey) {
			if !slices.Contains(racks[j], rack) {
				racks[j] = append(racks[j], rack)
				sort.Strings(racks[j])
			}
		}
	}
	return racks, bound
}

// Required scaling-group replica spread: 4 racks of 2 two-CPU hosts. The 4 decode replicas (2
// in the base PodGang, 2 in scaled ones) take 4 distinct racks although each rack could hold
// two; scaled to 5, exactly the 5th waits (no pod bound through a settle window), its PodGang
// saying the spread is why, although every rack still has room for it.
func TestRequiredScalingGroupReplicaSpread(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, decodeSpread(ns, "sg", 4, corev1alpha1.SpreadDoNotSchedule)))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "sg")) == 9 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "sg", "sg-0"))

	racks, _ := decodeRacks(t, env, ns, "sg")
	used := map[string]string{}
	for _, j := range []string{"0", "1", "2", "3"} {
		require.Len(t, racks[j], 1, "decode replica %s must be packed in one rack: %v", j, racks)
		other, taken := used[racks[j][0]]
		assert.False(t, taken, "decode replicas %s and %s share rack %s", other, j, racks[j][0])
		used[racks[j][0]] = j
	}
	assert.ElementsMatch(t, []string{"z0-b0-r0", "z0-b0-r1", "z0-b1-r0", "z0-b1-r1"}, keysOf(used), "one decode replica per rack: %v", racks)

	pcsg := &corev1alpha1.PodCliqueScalingGroup{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: common.PodCliqueScalingGroupName("sg", 0, "decode")}, pcsg))
	scaleTo(t, env, pcsg, 5)
	fifth := common.ScaledPodGangName(pcsg.Name, 4, 2)
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, fifth).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && c.Status == "False" && c.Reason == common.ReasonReplicaSpreadUnsatisfiable
	}, 2*time.Minute, 500*time.Millisecond, describe(env, ns, "sg", fifth))
	c := apimeta.FindStatusCondition(podGang(env, ns, fifth).Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
	assert.Contains(t, c.Message, "no rack ("+framework.RackKey+") that holds it is free of the other replicas")
	// Settle window: the 5th stays whole-waiting, the others stay where they are.
	require.Never(t, func() bool {
		_, bound := decodeRacks(t, env, ns, "sg")
		return bound["4"] > 0
	}, 10*time.Second, 500*time.Millisecond, "the 5th decode replica binds nothing")
	after, bound := decodeRacks(t, env, ns, "sg")
	for _, j := range []string{"0", "1", "2", "3"} {
		assert.Equal(t, racks[j], after[j], "decode replica %s stays where it was", j)
		assert.Equal(t, 2, bound[j])
	}
	w.assertNoPartialGang()
}

// Preferred scaling-group replica spread: 4 racks of 2 two-CPU hosts, each with room for two
// decode replicas. 4 replicas take one rack each (packing alone puts two in one rack, as the
// required test shows with the spread removed); scaled to 6, the racks run short and the
// replicas share, 2, 2, 1, 1, every one still packed in one rack.
func TestPreferredScalingGroupReplicaSpreadShares(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, decodeSpread(ns, "soft", 4, corev1alpha1.SpreadScheduleAnyway)))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "soft")) == 9 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "soft", "soft-0"))
	assert.Equal(t, []int{1, 1, 1, 1}, decodePerRack(t, env, ns, "soft"), "one decode replica per rack while racks last")

	pcsg := &corev1alpha1.PodCliqueScalingGroup{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: common.PodCliqueScalingGroupName("soft", 0, "decode")}, pcsg))
	scaleTo(t, env, pcsg, 6)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "soft")) == 13 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "soft", "soft-0"))
	assert.Equal(t, []int{1, 1, 2, 2}, decodePerRack(t, env, ns, "soft"), "racks shared only once every rack holds one")
	w.assertNoPartialGang()
}

// decodePerRack is the number of decode replicas in each rack that holds one, sorted; every
// decode replica must be packed in one rack.
func decodePerRack(t *testing.T, env *framework.Env, ns, name string) []int {
	t.Helper()
	racks, _ := decodeRacks(t, env, ns, name)
	perRack := map[string]int{}
	for j, r := range racks {
		require.Len(t, r, 1, "decode replica %s must be packed in one rack: %v", j, racks)
		perRack[r[0]]++
	}
	counts := make([]int, 0, len(perRack))
	for _, n := range perRack {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	return counts
}
