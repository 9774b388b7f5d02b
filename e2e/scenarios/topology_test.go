//go:build e2e

package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/e2e/framework"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// fabricTopology is the ClusterTopology of framework.CreateNodes' fabric.
func fabricTopology(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	keyedTopology(t, env, name, framework.FabricKeys{Zone: framework.ZoneKey, Block: framework.BlockKey, Rack: framework.RackKey})
}

// keyedTopology is the ClusterTopology zone > block > rack > host of a fabric with these keys.
func keyedTopology(t *testing.T, env *framework.Env, name string, keys framework.FabricKeys) {
	t.Helper()
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
		{Domain: "zone", Key: keys.Zone}, {Domain: "block", Key: keys.Block},
		{Domain: "rack", Key: keys.Rack}, {Domain: "host", Key: framework.HostKey}}}}
	require.NoError(t, env.Client.Create(context.Background(), ct))
}

// fabricEnv starts Grove with a fabric of twoCPUNode hosts and its ClusterTopology "fabric".
func fabricEnv(t *testing.T, f framework.Fabric) (*framework.Env, *gangWatcher, string) {
	t.Helper()
	env, w := startEnv(t, framework.Options{})
	_, err := env.CreateNodes(context.Background(), f, twoCPUNode)
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	return env, w, env.Cluster.TestNamespace(t)
}

// twoCPUNode holds two one-CPU pods.
var twoCPUNode = map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "8Gi"}

func labelsOfBoundPods(env *framework.Env, pods []corev1.Pod, key string) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		n := &corev1.Node{}
		if p.Spec.NodeName == "" || env.Client.Get(context.Background(), clientKeyOf(p.Spec.NodeName), n) != nil {
			continue
		}
		out[n.Labels[key]]++
	}
	return out
}

// Rack packing at the PodCliqueSet level: a gang of 4 one-CPU pods on racks of 2 two-CPU
// hosts fits in exactly one rack; a gang of 6 fits in no rack and stays whole-pending
// although the cluster has room for it.
func TestRequiredRackPacking(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()

	require.NoError(t, env.Client.Create(ctx, withTopology(pcs(ns, "fits", 2, clique("w", 4, "1")), "fabric", "rack", "")))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "fits")) == 8 }, 2*time.Minute, 500*time.Millisecond)
	for replica := 0; replica < 2; replica++ {
		var pods []corev1.Pod
		for _, p := range podsOf(t, env, ns, "fits") {
			if p.Labels["grove.io/podcliqueset-replica-index"] == itoa(replica) {
				pods = append(pods, p)
			}
		}
		racks := labelsOfBoundPods(env, pods, framework.RackKey)
		assert.Len(t, racks, 1, "replica %d spread over racks %v", replica, racks)
	}

	require.NoError(t, env.Client.Create(ctx, withTopology(pcs(ns, "wide", 1, clique("w", 6, "1")), "fabric", "rack", "")))
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "wide")) == 6 }, time.Minute, 500*time.Millisecond)
	require.Eventually(t, func() bool {
		pg := podGang(env, ns, "wide-0")
		for _, c := range pg.Status.Conditions {
			if c.Type == "Scheduled" && c.Status == "False" && c.Message != "" {
				return true
			}
		}
		return false
	}, 2*time.Minute, 500*time.Millisecond, describe(env, ns, "wide", "wide-0"))
	assert.Equal(t, 0, countBound(podsOf(t, env, ns, "wide")), "a gang wider than any rack must bind nothing")
	w.assertNoPartialGang()
}

// Clique-level host packing inside block packing: each clique's pods share a host, the whole
// replica shares a block.
func TestNestedBlockAndHostPacking(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	p := withTopology(pcs(ns, "nested", 1, clique("a", 2, "1", cliqueRequired("host")), clique("b", 2, "1", cliqueRequired("host"))), "fabric", "block", "")
	require.NoError(t, env.Client.Create(ctx, p))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "nested")) == 4 }, 2*time.Minute, 500*time.Millisecond)
	pods := podsOf(t, env, ns, "nested")
	assert.Len(t, labelsOfBoundPods(env, pods, framework.BlockKey), 1, "the replica must share one block")
	for _, c := range []string{"nested-0-a", "nested-0-b"} {
		var members []corev1.Pod
		for _, pod := range pods {
			if pod.Labels["grove.io/podclique"] == c {
				members = append(members, pod)
			}
		}
		assert.Len(t, labelsOfBoundPods(env, members, framework.HostKey), 1, "clique %s must share one host", c)
	}
	w.assertNoPartialGang()
}
