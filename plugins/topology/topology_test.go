package topology

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// racks: r1 holds 3 CPUs over two nodes, r2 holds 8 over two, r3 holds 16 on one.
func racks() []fwk.NodeInfo {
	return []fwk.NodeInfo{
		nodeInfo(testNode("r1-a", "2", rackKey, "r1")),
		nodeInfo(testNode("r1-b", "1", rackKey, "r1")),
		nodeInfo(testNode("r2-a", "4", rackKey, "r2")),
		nodeInfo(testNode("r2-b", "4", rackKey, "r2")),
		nodeInfo(testNode("r3-a", "16", rackKey, "r3")),
	}
}

func TestPreFilterChoosesTheTightestRackThatHoldsTheGang(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", gangSpec(4, rackKey, ""), 4, "1")
	state := framework.NewCycleState()
	res, st := p.PreFilter(context.Background(), state, pods[0], racks())
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res)
	assert.Equal(t, sets.New("r2-a", "r2-b"), res.NodeNames, "r2 holds 4 CPUs with least to spare; r1 is too small")

	// Filter keeps the member inside r2 even on nodes reached by other means.
	st = p.Filter(context.Background(), state, pods[0], nodeInfo(testNode("r3-a", "16", rackKey, "r3")))
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `node is outside the gang's rack "r2"`, st.Message())
	assert.Nil(t, p.Filter(context.Background(), state, pods[0], nodeInfo(testNode("r2-b", "4", rackKey, "r2"))))

	// The next member of the attempt reuses the choice, even if the nodes look different now.
	p.gangs.Assume(pods[0], "r2-a")
	res, st = p.PreFilter(context.Background(), framework.NewCycleState(), pods[1], racks()[4:])
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r2-a", "r2-b"), res.NodeNames)
}

func TestPreFilterTurnsAwayAGangNoRackHolds(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", gangSpec(4, rackKey, ""), 4, "5")
	_, st := p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], racks())
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `the PodGang needs 4 pods of 5 CPU within one rack (`+rackKey+`); the best rack, "r3", fits 3`, st.Message())
}

func TestPreFilterSkipsPodsItDoesNotConstrain(t *testing.T) {
	p := newTestPlugin(t, 50)
	addGang(p, "free", gangSpec(1, "", ""), 1, "1")
	cases := map[string]*v1.Pod{
		"a pod outside gangs":         member("plain", "", "1"),
		"a member of an unknown gang": member("u-0", "unknown", "1"),
		"a gang without constraints":  member("free-0", "free", "1"),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			state := framework.NewCycleState()
			res, st := p.PreFilter(context.Background(), state, pod, racks())
			assert.Nil(t, res)
			assert.Equal(t, fwk.Skip, st.Code())
			assert.Nil(t, p.Filter(context.Background(), state, pod, racks()[0]), "Filter lets it pass")
			assert.Equal(t, fwk.Skip, p.PreScore(context.Background(), state, pod, racks()).Code())
		})
	}
}

func TestScoreFavoursThePreferredRackThenFullerNodes(t *testing.T) {
	p := newTestPlugin(t, 60)
	pods := addGang(p, "g", gangSpec(2, "", rackKey), 2, "1")
	state := framework.NewCycleState()
	nodes := []fwk.NodeInfo{
		nodeInfo(testNode("r1-a", "2", rackKey, "r1")),
		nodeInfo(testNode("r2-a", "4", rackKey, "r2")),
		nodeInfo(testNode("r3-a", "16", rackKey, "r3")),
	}
	res, st := p.PreFilter(context.Background(), state, pods[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	require.NotNil(t, res, "Filter is narrowed to the preferred rack")
	assert.Equal(t, sets.New("r1-a"), res.NodeNames, "r1 holds both members with least to spare")
	require.Nil(t, p.PreScore(context.Background(), state, pods[0], nodes))

	score := func(ni fwk.NodeInfo) int64 {
		s, st := p.Score(context.Background(), state, pods[0], ni)
		require.Nil(t, st)
		return s
	}
	// In the preferred rack: 60 for the domain plus 40% of the pack score (1 of 2 CPUs → 50,
	// memory 0 → 0: average 25).
	assert.Equal(t, int64(60+40*25/100), score(nodes[0]))
	// Outside it only the pack score counts: 1 of 4 CPUs is 25, averaged with memory: 12.
	assert.Equal(t, int64(40*12/100), score(nodes[1]))
	busy := nodeInfo(testNode("r2-b", "4", rackKey, "r2"), member("x", "", "2"))
	assert.Greater(t, score(busy), score(nodes[1]), "a fuller node packs better")
}

// A member narrowed to its preferred rack that fits none of its nodes makes the gang's later
// attempts search every node.
func TestPostFilterDropsAMissedPreference(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", gangSpec(2, "", rackKey), 2, "1")
	nodes := []fwk.NodeInfo{nodeInfo(testNode("r1-a", "2", rackKey, "r1")), nodeInfo(testNode("r2-a", "4", rackKey, "r2"))}
	state := framework.NewCycleState()
	res, st := p.PreFilter(context.Background(), state, pods[0], nodes)
	require.True(t, st.IsSuccess())
	require.Equal(t, sets.New("r1-a"), res.NodeNames)

	_, st = p.PostFilter(context.Background(), state, pods[0], framework.NewDefaultNodeToStatus())
	assert.Equal(t, fwk.Unschedulable, st.Code(), "PostFilter never makes room itself")

	res, st = p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], nodes)
	assert.Nil(t, res, "every node is searched now")
	assert.Equal(t, fwk.Skip, st.Code())
}

func TestPostFilterWithoutNarrowingChangesNothing(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := addGang(p, "g", gangSpec(4, rackKey, ""), 4, "1")
	state := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), state, pods[0], racks())
	require.True(t, st.IsSuccess())
	_, st = p.PostFilter(context.Background(), state, pods[0], framework.NewDefaultNodeToStatus())
	assert.Equal(t, fwk.Unschedulable, st.Code())
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], racks())
	require.True(t, st.IsSuccess())
	assert.Equal(t, sets.New("r2-a", "r2-b"), res.NodeNames, "the required rack still holds")
}

// The placement index of the node list is reused from gang to gang only while the list holds
// the same node objects: a node relabelled into another rack (a new object, as the informer
// delivers it) is planned in its new rack by the next gang.
func TestPlansFollowANodeRelabelledBetweenGangs(t *testing.T) {
	p := newTestPlugin(t, 50)
	nodes := racks()
	first := addGang(p, "first", gangSpec(2, rackKey, ""), 2, "1")
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), first[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r1-a", "r1-b"), res.NodeNames, "r1 holds 2 CPUs with least to spare")

	// The same nodes: the next gang reuses the index, and chooses as the first did.
	same := addGang(p, "same", gangSpec(2, rackKey, ""), 2, "1")
	res, st = p.PreFilter(context.Background(), framework.NewCycleState(), same[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r1-a", "r1-b"), res.NodeNames)

	// Both nodes of r1 move to r3: r1 is gone, and r2 is tighter than r3 (now 19 CPUs).
	nodes[0] = nodeInfo(testNode("r1-a", "2", rackKey, "r3"))
	nodes[1] = nodeInfo(testNode("r1-b", "1", rackKey, "r3"))
	moved := addGang(p, "moved", gangSpec(2, rackKey, ""), 2, "1")
	res, st = p.PreFilter(context.Background(), framework.NewCycleState(), moved[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r2-a", "r2-b"), res.NodeNames, "r1 has no node left")
}
