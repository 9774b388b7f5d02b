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

// The placements below are exact because grove-scheduler picks, for a required domain, the
// tightest one that holds the gang, and among equally tight ones the first by label value;
// replicas are added one at a time so that the order gangs are placed in is known.

// Rack packing at the scaling-group level: each replica of the group fills one rack (4 one-CPU
// pods on 2 two-CPU hosts), replicas go to different racks, and the PodCliqueSet as a whole
// spans several racks.
func TestScalingGroupRackPacking(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 4, HostsPerRack: 2})
	p := withGroup(pcs(ns, "sg", 1, clique("w", 4, "1")), "workers", 1, 1, "w")
	group(p, "workers").TopologyConstraint = pack("fabric", "rack", "")
	require.NoError(t, env.Client.Create(context.Background(), p))

	pcsg := common.PodCliqueScalingGroupName("sg", 0, "workers")
	rack := func(r string) map[string]int { return perHost(2, "z0-b0-"+r+"-h0", "z0-b0-"+r+"-h1") }
	want := map[string]map[string]int{common.BasePodGangName("sg", 0): rack("r0")}
	assert.Equal(t, want, placement(waitPods(t, env, ns, "sg", 4), common.LabelPodGang))
	for replicas, r := range []string{"r1", "r2"} {
		scaleTo(t, env, pcsgRef(ns, pcsg), int32(replicas+2))
		want[common.ScaledPodGangName(pcsg, replicas+1, 1)] = rack(r)
		assert.Equal(t, want, placement(waitPods(t, env, ns, "sg", 4*(replicas+2)), common.LabelPodGang))
	}
	for gang := range want {
		waitScheduled(t, env, ns, gang)
	}
	w.assertNoPartialGang()
}

// Clique-level packing nested in PodCliqueSet-level block packing: clique a (4 pods) fills one
// rack and clique b (2 pods) one host of the other rack, both inside the replica's block; the
// second replica goes to the other block, its cliques placed the same way.
func TestCliquePackingInsideBlock(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	p := withTopology(pcs(ns, "nest", 1, clique("a", 4, "1", cliqueRequired("rack")), clique("b", 2, "1", cliqueRequired("host"))), "fabric", "block", "")
	require.NoError(t, env.Client.Create(context.Background(), p))

	want := map[string]map[string]int{}
	for replica, block := range []string{"z0-b0", "z0-b1"} {
		if replica > 0 {
			scaleTo(t, env, p, int32(replica+1))
		}
		want[common.StandalonePodCliqueName("nest", replica, "a")] = perHost(2, block+"-r0-h0", block+"-r0-h1")
		want[common.StandalonePodCliqueName("nest", replica, "b")] = perHost(2, block+"-r1-h0")
		assert.Equal(t, want, placement(waitPods(t, env, ns, "nest", 6*(replica+1)), common.LabelPodClique))
	}
	w.assertNoPartialGang()
}

// Preferred rack packing: a gang that fits one rack lands in one rack although its pods would
// spread over the emptier nodes of all racks without the preference; a gang no rack can hold
// is still placed whole, over two racks, with nothing pending.
func TestPreferredRackPacking(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 3, HostsPerRack: 2})
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, withTopology(pcs(ns, "near", 1, clique("w", 4, "1")), "fabric", "", "rack")))
	assert.Equal(t, map[string]map[string]int{"near-0": perHost(2, "z0-b0-r0-h0", "z0-b0-r0-h1")},
		placement(waitPods(t, env, ns, "near", 4), common.LabelPodGang))

	require.NoError(t, env.Client.Create(ctx, withTopology(pcs(ns, "far", 1, clique("w", 8, "1")), "fabric", "", "rack")))
	assert.Equal(t, map[string]map[string]int{"far-0": perHost(2, "z0-b0-r1-h0", "z0-b0-r1-h1", "z0-b0-r2-h0", "z0-b0-r2-h1")},
		placement(waitPods(t, env, ns, "far", 8), common.LabelPodGang))
	waitScheduled(t, env, ns, "near-0", "far-0")
	w.assertNoPartialGang()
}

// Two ClusterTopologies over two node pools whose nodes carry different label keys (the same
// domain names, rack and block, map to other keys): each PodCliqueSet is packed by the keys of
// the topology it names and lands only on that pool, even when only the other pool has room.
func TestMultipleClusterTopologies(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ctx := context.Background()
	keys := map[string]framework.FabricKeys{}
	for pool, racks := range map[string]int{"a": 2, "b": 3} {
		keys[pool] = framework.FabricKeys{Zone: pool + ".grove.io/zone", Block: pool + ".grove.io/block", Rack: pool + ".grove.io/rack"}
		_, err := env.CreateNodes(ctx, framework.Fabric{Prefix: pool, Zones: 1, BlocksPerZone: 1, RacksPerBlock: racks, HostsPerRack: 2, Keys: keys[pool]}, twoCPUNode)
		require.NoError(t, err)
		keyedTopology(t, env, "pool-"+pool, keys[pool])
	}
	ns := env.Cluster.TestNamespace(t)
	for _, pool := range []string{"b", "a"} {
		require.NoError(t, env.Client.Create(ctx, withTopology(pcs(ns, "on-"+pool, 1, clique("w", 4, "1")), "pool-"+pool, "rack", "")))
	}
	rack := func(pool string, r int) map[string]int {
		return perHost(2, pool+"-z0-b0-r"+itoa(r)+"-h0", pool+"-z0-b0-r"+itoa(r)+"-h1")
	}
	for _, pool := range []string{"a", "b"} {
		name := "on-" + pool
		assert.Equal(t, map[string]map[string]int{name + "-0": rack(pool, 0)}, placement(waitPods(t, env, ns, name, 4), common.LabelPodGang))
		pg := podGang(env, ns, name+"-0")
		assert.Equal(t, "pool-"+pool, pg.Annotations[common.AnnotationTopologyName])
		if assert.NotNil(t, pg.Spec.TopologyConstraint) && assert.NotNil(t, pg.Spec.TopologyConstraint.PackConstraint) {
			assert.Equal(t, keys[pool].Rack, ptr.Deref(pg.Spec.TopologyConstraint.PackConstraint.Required, ""))
		}
		scaleTo(t, env, pcsRef(ns, name), 2)
		assert.Equal(t, map[string]map[string]int{name + "-0": rack(pool, 0), name + "-1": rack(pool, 1)},
			placement(waitPods(t, env, ns, name, 8), common.LabelPodGang))
	}

	// Pool a is full; a third replica of on-a waits whole although rack b-z0-b0-r2 is free.
	scaleTo(t, env, pcsRef(ns, "on-a"), 3)
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, "on-a-2").Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	}, 2*time.Minute, 250*time.Millisecond, describe(env, ns, "on-a", "on-a-2"))
	pods := livePods(podsOf(t, env, ns, "on-a"))
	require.Len(t, pods, 12)
	assert.Equal(t, 8, countBound(pods), "the third replica must bind nothing outside its pool")
	// That rack takes on-b's third replica.
	scaleTo(t, env, pcsRef(ns, "on-b"), 3)
	assert.Equal(t, rack("b", 2), placement(waitPods(t, env, ns, "on-b", 12), common.LabelPodGang)["on-b-2"])
	w.assertNoPartialGang()
}

// packingCase is one PodCliqueSet of TestPackingAtEveryLevel and how its pods must share
// domains: grouped by the pod label `by`, each group's bound pods span exactly `spans` values
// of the node label `key`.
type packingCase struct {
	name  string
	pcs   func(ns string) *corev1alpha1.PodCliqueSet
	pods  int
	by    string
	key   string
	spans int
}

// Required and preferred packing at the PodCliqueSet, scaling-group and clique level, for the
// domains the other scenarios leave out, each on an empty fabric of 2 blocks × 2 racks × 2
// two-CPU hosts. The first case is the control: without a constraint the default scoring
// (least allocated) spreads a gang's pods over separate hosts and racks, so packing the others
// see is the constraint's doing.
func TestPackingAtEveryLevel(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	onGroup := func(p *corev1alpha1.PodCliqueSet, required, preferred string) *corev1alpha1.PodCliqueSet {
		group(p, "g").TopologyConstraint = pack("fabric", required, preferred)
		return p
	}
	onClique := func(required, preferred string) cliqueOpt {
		return func(c *corev1alpha1.PodCliqueTemplateSpec) {
			c.TopologyConstraint = pack("fabric", required, preferred)
		}
	}
	cases := []packingCase{
		{name: "unconstrained", pods: 4, by: common.LabelPodGang, key: framework.RackKey, spans: 2,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet { return pcs(ns, "spread", 1, clique("w", 4, "1")) }},
		{name: "set host", pods: 4, by: common.LabelPodGang, key: framework.HostKey, spans: 1,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet {
				return withTopology(pcs(ns, "set-host", 2, clique("w", 2, "1")), "fabric", "host", "")
			}},
		{name: "group host", pods: 4, by: common.LabelPodGang, key: framework.HostKey, spans: 1,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet {
				return onGroup(withGroup(pcs(ns, "group-host", 1, clique("w", 2, "1")), "g", 2, 1, "w"), "host", "")
			}},
		{name: "group block", pods: 8, by: common.LabelPodGang, key: framework.BlockKey, spans: 1,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet {
				return onGroup(withGroup(pcs(ns, "group-block", 1, clique("p", 2, "1"), clique("d", 2, "1")), "g", 2, 1, "p", "d"), "block", "")
			}},
		{name: "clique block", pods: 6, by: common.LabelPodClique, key: framework.BlockKey, spans: 1,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet {
				return pcs(ns, "clique-block", 1, clique("a", 3, "1", onClique("block", "")), clique("b", 3, "1", onClique("block", "")))
			}},
		{name: "group preferred rack", pods: 8, by: common.LabelPodGang, key: framework.RackKey, spans: 1,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet {
				return onGroup(withGroup(pcs(ns, "group-near", 1, clique("w", 4, "1")), "g", 2, 1, "w"), "", "rack")
			}},
		{name: "clique preferred host", pods: 4, by: common.LabelPodClique, key: framework.HostKey, spans: 1,
			pcs: func(ns string) *corev1alpha1.PodCliqueSet {
				return pcs(ns, "clique-near", 1, clique("a", 2, "1", onClique("", "host")), clique("b", 2, "1", onClique("", "host")))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pcs(ns)
			require.NoError(t, env.Client.Create(ctx, p))
			pods := waitPods(t, env, ns, p.Name, tc.pods)
			spans := map[string]map[string]int{}
			for set := range placement(pods, tc.by) {
				var members []corev1.Pod
				for _, pod := range pods {
					if pod.Labels[tc.by] == set {
						members = append(members, pod)
					}
				}
				spans[set] = labelsOfBoundPods(env, members, tc.key)
			}
			for set, domains := range spans {
				if tc.spans == 1 {
					assert.Len(t, domains, 1, "%s %s spans %s values %v", tc.by, set, tc.key, domains)
				} else {
					assert.GreaterOrEqual(t, len(domains), tc.spans, "%s %s spans %s values %v", tc.by, set, tc.key, domains)
				}
			}
			// Leave an empty fabric to the next case.
			require.NoError(t, env.Client.Delete(ctx, p))
			require.Eventually(t, func() bool { return len(podsOf(t, env, ns, p.Name)) == 0 }, 2*time.Minute, 250*time.Millisecond)
		})
	}
	w.assertNoPartialGang()
}
