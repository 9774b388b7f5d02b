package topology

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// A member lost with its node comes back as a new pod of the same gang; its three survivors are
// bound in rack r1. The replacement's domain is the one they pin: r1's free node, although r0's
// free node is as tight a fit for one pod and sorts first.
func TestReplacementIsPinnedToTheRackOfItsSurvivors(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", gangSpec(4, rackKey, ""), 4, "1")
	survivors, replacement := pods[1:], pods[0]
	r1 := []*v1.Node{testNode("r1-a", "1", rackKey, "r1"), testNode("r1-b", "1", rackKey, "r1"),
		testNode("r1-c", "1", rackKey, "r1"), testNode("r1-d", "1", rackKey, "r1")}
	var nodes []fwk.NodeInfo
	for i, s := range survivors {
		s.Spec.NodeName = r1[i].Name
		p.gangs.UpsertPod(s)
		nodes = append(nodes, nodeInfo(r1[i], s))
	}
	free := nodeInfo(r1[3])
	other := nodeInfo(testNode("r0-a", "1", rackKey, "r0"))

	res, st := p.PreFilter(t.Context(), framework.NewCycleState(), replacement, append([]fwk.NodeInfo{other, free}, nodes...))
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res)
	assert.Equal(t, sets.New("r1-a", "r1-b", "r1-c", "r1-d"), res.NodeNames, "only r1's nodes are candidates")

	// Without room in r1 it waits, and says for which rack: r0's room is not for it.
	state := framework.NewCycleState()
	_, st = p.PreFilter(t.Context(), state, replacement, append([]fwk.NodeInfo{other}, nodes...))
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `the PodGang needs 1 pod of 1 CPU more within rack "r1" (`+rackKey+`), where its members already run; it fits 0`, st.Message())
	nd := gangcache.NoDomainIn(state)
	require.NotNil(t, nd)
	assert.Equal(t, "no_domain", nd.Cause)
}

// A PodGang lost whole with its node (every member replaced) is pinned by the other PodGang of
// its PodCliqueSet replica (spec.sharedTopologyConstraint): its own rack is chosen anew, inside
// the zone the replica holds, although zone z0 holds the whole replica as tightly and sorts
// first.
func TestReplacedPodGangStaysInTheZoneOfItsReplica(t *testing.T) {
	p := newTestPlugin(t, 50)
	shared := func(spec v1alpha1.PodGangSpec) v1alpha1.PodGangSpec {
		spec.SharedTopologyConstraint = &v1alpha1.SharedTopologyConstraint{Group: "replica",
			PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(zoneKey)}}
		return spec
	}
	other := addGang(p, "scaled", shared(gangSpec(1, rackKey, "")), 1, "1")
	other[0].Spec.NodeName = "z1-r2-a"
	p.gangs.UpsertPod(other[0])
	lost := addGang(p, "base", shared(gangSpec(2, rackKey, "")), 2, "1")

	nodes := []fwk.NodeInfo{
		nodeInfo(testNode("z0-r0-a", "1", zoneKey, "z0", rackKey, "r0")),
		nodeInfo(testNode("z0-r0-b", "1", zoneKey, "z0", rackKey, "r0")),
		nodeInfo(testNode("z0-r0-c", "1", zoneKey, "z0", rackKey, "r0")),
		nodeInfo(testNode("z1-r1-a", "1", zoneKey, "z1", rackKey, "r1")),
		nodeInfo(testNode("z1-r2-a", "1", zoneKey, "z1", rackKey, "r2"), other[0]),
		nodeInfo(testNode("z1-r2-b", "1", zoneKey, "z1", rackKey, "r2")),
		nodeInfo(testNode("z1-r2-c", "1", zoneKey, "z1", rackKey, "r2")),
	}
	res, st := p.PreFilter(t.Context(), framework.NewCycleState(), lost[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res)
	assert.Equal(t, sets.New("z1-r2-a", "z1-r2-b", "z1-r2-c"), res.NodeNames, "the rack of zone z1 that holds the PodGang")
}

// With a preferred rack only, the survivors' rack is the replacement's preferred domain: the
// filter runs only on its nodes while it has room, so the gang keeps its placement score.
func TestReplacementPrefersTheRackOfItsSurvivors(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", gangSpec(3, "", rackKey), 3, "1")
	survivors, replacement := pods[1:], pods[0]
	// r0's one free node is as tight a fit for one pod as r1's, and sorts first.
	nodes := []fwk.NodeInfo{nodeInfo(testNode("r0-a", "1", rackKey, "r0"))}
	for i, s := range survivors {
		n := testNode(fmt.Sprintf("r1-%d", i), "1", rackKey, "r1")
		s.Spec.NodeName = n.Name
		p.gangs.UpsertPod(s)
		nodes = append(nodes, nodeInfo(n, s))
	}
	nodes = append(nodes, nodeInfo(testNode("r1-free", "1", rackKey, "r1")))
	state := framework.NewCycleState()
	res, st := p.PreFilter(t.Context(), state, replacement, nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res)
	assert.Equal(t, sets.New("r1-0", "r1-1", "r1-free"), res.NodeNames)
	in, _ := p.Score(t.Context(), state, replacement, nodes[3])
	out, _ := p.Score(t.Context(), state, replacement, nodes[0])
	assert.Greater(t, in, out, "a node of r1 scores above one of r0")
}
