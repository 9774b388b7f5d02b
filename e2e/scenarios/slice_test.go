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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// slicedPCS is one replica of a 32-pod clique "w" (one CPU each) packed into one block and cut
// into slices of at most 16 pods, each in a rack of its own.
func slicedPCS(ns, name string) *corev1alpha1.PodCliqueSet {
	p := pcs(ns, name, 1, clique("w", 32, "1"))
	p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric"}
	p.Spec.Template.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{
		Pack:  &corev1alpha1.TopologyPackConstraint{Required: "block"},
		Slice: &corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: ptr.To[int32](16)}}
	return p
}

// racksBySlice maps each slice label of the bound pods to the racks its pods run in, with counts.
func racksBySlice(t *testing.T, env *framework.Env, ns, name string) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	for _, p := range podsOf(t, env, ns, name) {
		for rack, n := range labelsOfBoundPods(env, []corev1.Pod{p}, framework.RackKey) {
			s := p.Labels[common.LabelSliceIndex]
			if out[s] == nil {
				out[s] = map[string]int{}
			}
			out[s][rack] += n
		}
	}
	return out
}

func envOfPod(p corev1.Pod, name string) string {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// 32 pods on two racks of 18 one-pod nodes in one block: 16 + 16, never 18 + 14, and every
// pod's slice label names the rack it runs in.
func TestSliceBalancedAcrossRacks(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ctx := context.Background()
	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 2, HostsPerRack: 18}, oneCPUNode)
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	ns := env.Cluster.TestNamespace(t)
	require.NoError(t, env.Client.Create(ctx, slicedPCS(ns, "nvl")))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "nvl")) == 32 }, 3*time.Minute, 500*time.Millisecond,
		describe(env, ns, "nvl", "nvl-0"))

	assert.Equal(t, map[string]map[string]int{"0": {"z0-b0-r0": 16}, "1": {"z0-b0-r1": 16}}, swapIfNeeded(racksBySlice(t, env, ns, "nvl")))
	for _, p := range podsOf(t, env, ns, "nvl") {
		assert.Equal(t, "16", envOfPod(p, common.EnvSliceSize), "pod %s", p.Name)
		assert.Equal(t, "2", envOfPod(p, common.EnvSliceCount), "pod %s", p.Name)
		assert.Equal(t, p.Labels[common.LabelSliceIndex], envOfPod(p, common.EnvSliceIndex), "pod %s", p.Name)
	}
	w.assertNoPartialGang()
}

// swapIfNeeded orders the racks of the two slices so that the assertion does not depend on
// which rack slice 0 took (both racks are as tight).
func swapIfNeeded(m map[string]map[string]int) map[string]map[string]int {
	if _, ok := m["0"]["z0-b0-r1"]; ok {
		m["0"], m["1"] = m["1"], m["0"]
	}
	return m
}

// The block has room for the 32 pods, but only as 18 + 14: another workload holds 4 nodes of
// one rack. A required slicing waits whole rather than split 18 + 14, saying why
// (SliceUnsatisfiable). When the other workload goes, it lands 16 + 16.
func TestSliceWaitsWholeForARackOfItsOwn(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ctx := context.Background()
	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 2, HostsPerRack: 18}, oneCPUNode)
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	ns := env.Cluster.TestNamespace(t)

	blocker := withTopology(pcs(ns, "other", 1, clique("b", 4, "1")), "fabric", "rack", "")
	require.NoError(t, env.Client.Create(ctx, blocker))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "other")) == 4 }, 2*time.Minute, 500*time.Millisecond)

	require.NoError(t, env.Client.Create(ctx, slicedPCS(ns, "nvl")))
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		cond = apimeta.FindStatusCondition(podGang(env, ns, "nvl-0").Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return cond != nil && cond.Reason == common.ReasonSliceUnsatisfiable
	}, 2*time.Minute, 500*time.Millisecond, describe(env, ns, "nvl", "nvl-0"))
	assert.Contains(t, cond.Message, `PodGroup "nvl-0-w" needs slices of 16+16 pods, each whole within a rack of its own`)
	assert.Zero(t, countBound(podsOf(t, env, ns, "nvl")), "the gang waits whole")

	require.NoError(t, env.Client.Delete(ctx, blocker))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "nvl")) == 32 }, 3*time.Minute, 500*time.Millisecond,
		describe(env, ns, "nvl", "nvl-0"))
	assert.Equal(t, map[string]map[string]int{"0": {"z0-b0-r0": 16}, "1": {"z0-b0-r1": 16}}, swapIfNeeded(racksBySlice(t, env, ns, "nvl")))
	w.assertNoPartialGang()
}

// The same on nodes that hold two pods each (racks of 9 hosts, 18 pods): members of one slice
// are batched together, and never with another slice's, so each slice still lands whole in a
// rack of its own.
func TestSliceBalancedOnTwoPodNodes(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ctx := context.Background()
	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 2, HostsPerRack: 9}, twoCPUNode)
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	ns := env.Cluster.TestNamespace(t)
	require.NoError(t, env.Client.Create(ctx, slicedPCS(ns, "nvl")))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "nvl")) == 32 }, 3*time.Minute, 500*time.Millisecond,
		describe(env, ns, "nvl", "nvl-0"))
	assert.Equal(t, map[string]map[string]int{"0": {"z0-b0-r0": 16}, "1": {"z0-b0-r1": 16}}, swapIfNeeded(racksBySlice(t, env, ns, "nvl")))
	w.assertNoPartialGang()
}
