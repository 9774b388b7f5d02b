package topology

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// spreadGang is gangSpec with a replica spread over racks, as member of group "pcs".
func spreadGang(minReplicas int32, pack, member string, required bool) v1alpha1.PodGangSpec {
	spec := gangSpec(minReplicas, pack, "")
	spec.ReplicaSpreadConstraints = []v1alpha1.ReplicaSpreadConstraint{{Group: "pcs", Member: member, TopologyKey: rackKey, Required: required}}
	return spec
}

// fourRacks: r1..r4 of two 2-CPU nodes each.
func fourRacks() []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, r := range []string{"r1", "r2", "r3", "r4"} {
		out = append(out, nodeInfo(testNode(r+"-a", "2", rackKey, r)), nodeInfo(testNode(r+"-b", "2", rackKey, r)))
	}
	return out
}

func TestPreFilterKeepsARequiredSpreadReplicaOutOfOtherReplicasRacks(t *testing.T) {
	p := newTestPlugin(t, 50)
	// Replica 0 runs in r1 (its base and a scaled gang, both member pcs-0); replica 1 in r2.
	r0 := addGang(p, "pcs-0", spreadGang(1, rackKey, "pcs-0", true), 1, "1")
	p.gangs.Bind(r0[0], "r1-a")
	r0s := addGang(p, "pcs-0-sg-1", spreadGang(1, rackKey, "pcs-0", true), 1, "1")
	p.gangs.Bind(r0s[0], "r1-b")
	r1 := addGang(p, "pcs-1", spreadGang(1, rackKey, "pcs-1", true), 1, "1")
	p.gangs.Bind(r1[0], "r2-b")

	// A scaled gang of replica 0 is not pushed away by its own replica: r1 is the tightest.
	own := addGang(p, "pcs-0-sg-2", spreadGang(1, rackKey, "pcs-0", true), 1, "1")
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), own[0], fourRacks())
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r1-a", "r1-b"), res.NodeNames)

	// Replica 2 gets a rack nobody uses; Filter holds it there.
	pods := addGang(p, "pcs-2", spreadGang(4, rackKey, "pcs-2", true), 4, "1")
	state := framework.NewCycleState()
	res, st = p.PreFilter(context.Background(), state, pods[0], fourRacks())
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r3-a", "r3-b"), res.NodeNames)

	// Replica 3 without a pack key: any node outside r1 and r2, and Filter refuses r2's nodes.
	loose := addGang(p, "pcs-3", spreadGang(1, "", "pcs-3", true), 1, "1")
	state = framework.NewCycleState()
	res, st = p.PreFilter(context.Background(), state, loose[0], fourRacks())
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r3-a", "r3-b", "r4-a", "r4-b"), res.NodeNames)
	st = p.Filter(context.Background(), state, loose[0], nodeInfo(testNode("r2-a", "2", rackKey, "r2")))
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, "node is in a domain another replica of the gang's spread group uses", st.Message())
}

func TestPreFilterTurnsAwayARequiredSpreadReplicaWithoutAFreeRack(t *testing.T) {
	p := newTestPlugin(t, 50)
	for i, r := range []string{"r1", "r2", "r3", "r4"} {
		name := "pcs-" + string(rune('0'+i))
		pods := addGang(p, name, spreadGang(1, rackKey, name, true), 1, "1")
		p.gangs.Bind(pods[0], r+"-a")
	}
	fifth := addGang(p, "pcs-4", spreadGang(2, rackKey, "pcs-4", true), 2, "1")
	_, st := p.PreFilter(context.Background(), framework.NewCycleState(), fifth[0], fourRacks())
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Contains(t, st.Message(), `within a domain of its own: no rack (`+rackKey+`) that holds it is free of the other replicas of its PodCliqueSet`)
}

func TestPreFilterSteersAPreferredSpreadReplicaToTheLeastUsedRack(t *testing.T) {
	p := newTestPlugin(t, 50)
	// Replicas in r1 (twice) and r2; r3 and r4 are empty but r1's free node is the tightest fit.
	for i, n := range []string{"r1-a", "r1-a", "r2-a"} {
		name := "pcs-" + string(rune('0'+i))
		pods := addGang(p, name, spreadGang(1, rackKey, name, false), 1, "1")
		p.gangs.Bind(pods[0], n)
	}
	pods := addGang(p, "pcs-3", spreadGang(1, rackKey, "pcs-3", false), 1, "1")
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], fourRacks())
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r3-a", "r3-b"), res.NodeNames)
}

func TestNodeChangeOfTheSpreadKeyRequeues(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", spreadGang(1, "", "g", true), 1, "1")
	base := testNode("n", "8", rackKey, "r1", zoneKey, "z1")
	moved := base.DeepCopy()
	moved.Labels[rackKey] = "r9"
	rezoned := base.DeepCopy()
	rezoned.Labels[zoneKey] = "z9"
	for name, tc := range map[string]struct {
		new  *v1.Node
		want fwk.QueueingHint
	}{
		"the spread key changed":                      {new: moved, want: fwk.Queue},
		"a key the gang neither packs nor spreads by": {new: rezoned, want: fwk.QueueSkip},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := p.isSchedulableAfterNodeChange(klog.Background(), pods[0], base, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A base PodGang holding two replicas of a scaling group (d0, d1: each packed into a rack by
// its group config) whose spread is preferred: the operator keeps them apart with a preferred
// anti-affinity group and one scoped spread entry each. Every rack holds both replicas, but
// while racks are free each replica's members go to a rack of its own.
func TestPreFilterPutsPreferredScalingGroupReplicasOfOneGangInRacksOfTheirOwn(t *testing.T) {
	p := newTestPlugin(t, 50)
	spec := v1alpha1.PodGangSpec{
		PodGroups:          []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 1}, {Name: "d0", MinReplicas: 2}, {Name: "d1", MinReplicas: 2}},
		AntiAffinityGroups: []v1alpha1.RoleAffinityGroup{{Name: "pcs-0-decode", TopologyKey: rackKey}},
	}
	for _, g := range []string{"d0", "d1"} {
		spec.TopologyConstraintGroupConfigs = append(spec.TopologyConstraintGroupConfigs, v1alpha1.TopologyConstraintGroupConfig{
			Name: "sg-" + g, PodGroupNames: []string{g}, TopologyConstraint: gangSpec(1, rackKey, "").TopologyConstraint})
		spec.AntiAffinityGroups[0].Members = append(spec.AntiAffinityGroups[0].Members, v1alpha1.RoleAffinityMember{Name: "sg-" + g, PodGroupNames: []string{g}})
		spec.ReplicaSpreadConstraints = append(spec.ReplicaSpreadConstraints, v1alpha1.ReplicaSpreadConstraint{
			Group: "pcs-0-decode", Member: "sg-" + g, TopologyKey: rackKey, MaxSkew: 1, PodGroupNames: []string{g}})
	}
	addGang(p, "pcs-0", spec, 0, "1")
	pods := map[string][]*v1.Pod{}
	for _, g := range []string{"fe", "d0", "d0", "d1", "d1"} {
		pod := member(fmt.Sprintf("pcs-0-%s-%d", g, len(pods[g])), "pcs-0", "1")
		pod.Labels[common.LabelPodClique] = g
		p.gangs.UpsertPod(pod)
		pods[g] = append(pods[g], pod)
	}

	racks := map[string]sets.Set[string]{}
	for _, g := range []string{"d0", "d1"} {
		res, st := p.PreFilter(context.Background(), framework.NewCycleState(), pods[g][0], fourRacks())
		require.True(t, st.IsSuccess(), "%s: status: %v", g, st)
		require.NotNil(t, res, g)
		racks[g] = res.NodeNames
		for i, pod := range pods[g] {
			p.gangs.Assume(pod, sets.List(res.NodeNames)[i%res.NodeNames.Len()])
		}
	}
	assert.Len(t, racks["d0"], 2, "d0 is packed into one rack: %v", racks["d0"])
	assert.Len(t, racks["d1"], 2, "d1 is packed into one rack: %v", racks["d1"])
	assert.Empty(t, racks["d0"].Intersection(racks["d1"]), "the replicas share a rack: %v, %v", racks["d0"], racks["d1"])
}

// Under a preferred spread, members are held to the least used racks within their required
// domain too, when that domain is wider than a rack (a zone), and across every node when the
// gang packs by no key. Zones z1 (racks r1, r2) and z2 (r3, r4); replicas run in r1 and r3.
func TestPreFilterHoldsAPreferredSpreadReplicaToTheLeastUsedRacksOfItsZone(t *testing.T) {
	p := newTestPlugin(t, 50)
	var nodes []fwk.NodeInfo
	for _, r := range []string{"r1", "r2", "r3", "r4"} {
		zone := map[string]string{"r1": "z1", "r2": "z1", "r3": "z2", "r4": "z2"}[r]
		for _, n := range []string{"-a", "-b"} {
			nodes = append(nodes, nodeInfo(testNode(r+n, "2", rackKey, r, zoneKey, zone)))
		}
	}
	for i, n := range []string{"r1-a", "r3-a"} {
		name := fmt.Sprintf("pcs-%d", i)
		pods := addGang(p, name, spreadGang(1, zoneKey, name, false), 1, "1")
		p.gangs.Bind(pods[0], n)
	}

	zoned := addGang(p, "pcs-2", spreadGang(1, zoneKey, "pcs-2", false), 1, "1")
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), zoned[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res)
	assert.Equal(t, sets.New("r2-a", "r2-b"), res.NodeNames, "the free rack of the chosen zone z1")

	loose := addGang(p, "pcs-3", spreadGang(1, "", "pcs-3", false), 1, "1")
	res, st = p.PreFilter(context.Background(), framework.NewCycleState(), loose[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res)
	assert.Equal(t, sets.New("r2-a", "r2-b", "r4-a", "r4-b"), res.NodeNames, "every free rack")
}
