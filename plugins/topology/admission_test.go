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

// twoRacks: r1 and r2 of two 4-CPU nodes each, r2's nodes also in zone z2; r1 comes first.
func twoRacks() []*v1.Node {
	return []*v1.Node{
		testNode("r1-a", "4", rackKey, "r1"), testNode("r1-b", "4", rackKey, "r1"),
		testNode("r2-a", "4", rackKey, "r2", zoneKey, "z2"), testNode("r2-b", "4", rackKey, "r2", zoneKey, "z2"),
	}
}

func infosOf(nodes []*v1.Node) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = nodeInfo(n)
	}
	return out
}

// planRack plans the first member of a new rack-required gang of 2 over nodes and returns the
// nodes it may use.
func planRack(t *testing.T, p *Plugin, name string, nodes []fwk.NodeInfo, change ...func(*v1.Pod)) sets.Set[string] {
	t.Helper()
	pods := addGang(p, name, gangSpec(2, rackKey, ""), 2, "1", change...)
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], nodes)
	require.True(t, st.IsSuccess(), "gang %s: %v", name, st)
	return res.NodeNames
}

// The nodes' admission of a gang's node rules is remembered from gang to gang while the node
// objects stay the same: a node object that changes (here cordoned) is asked again, for every
// later gang too, and other rules get answers of their own.
func TestPlansReadWhichNodesAdmitAGangAfresh(t *testing.T) {
	p := newTestPlugin(t, 50)
	nodes := twoRacks()
	infos := infosOf(nodes)
	assert.Equal(t, sets.New("r1-a", "r1-b"), planRack(t, p, "a", infos), "equal racks: the first")
	assert.Equal(t, sets.New("r2-a", "r2-b"), planRack(t, p, "zoned", infos, func(pod *v1.Pod) {
		pod.Spec.NodeSelector = map[string]string{zoneKey: "z2"}
	}), "r1's nodes are outside the zone its members select")
	assert.Equal(t, sets.New("r1-a", "r1-b"), planRack(t, p, "b", infos), "without a selector r1 admits it again")

	cordoned := twoRacks()
	for _, n := range cordoned[:2] {
		n.Spec.Unschedulable = true
	}
	infos = infosOf(append(cordoned[:2:2], nodes[2:]...))
	assert.Equal(t, sets.New("r2-a", "r2-b"), planRack(t, p, "c", infos), "r1 is cordoned")
	assert.Equal(t, sets.New("r2-a", "r2-b"), planRack(t, p, "d", infos), "still cordoned for the next gang")
}
