package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// statuses is a NodeToStatusReader over a map.
type statuses map[string]*fwk.Status

func (s statuses) Get(node string) *fwk.Status { return s[node] }
func (s statuses) NodesForStatusCode(fwk.NodeInfoLister, fwk.Code) ([]fwk.NodeInfo, error) {
	return nil, nil
}

// activated records the pods handed back to the queue.
type activated struct {
	fwk.Handle
	pods sets.Set[string]
}

func (a *activated) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for k := range pods {
		a.pods.Insert(k)
	}
}

func rejected(plugin, msg string) *fwk.Status {
	st := fwk.NewStatus(fwk.Unschedulable, msg)
	st.SetPlugin(plugin)
	return st
}

// Counted capacity chooses the tightest rack; when a filter other than the resource fit rejects
// every node of it, the rack is ruled out and the gang is tried again at once in the next one.
// When every rack is ruled out, the gang says which filter ruled out which rack. A room change
// forgets what was learned.
func TestADomainAFilterRejectsIsRevised(t *testing.T) {
	p := newTestPlugin(t, 0)
	h := &activated{pods: sets.New[string]()}
	p.handle = h
	pods := addGang(p, "g", gangSpec(2, rackKey, ""), 2, "1")
	nodes := []fwk.NodeInfo{
		nodeInfo(testNode("small", "2", rackKey, "r0")),
		nodeInfo(testNode("big-0", "2", rackKey, "r1")), nodeInfo(testNode("big-1", "2", rackKey, "r1")),
	}
	choose := func() (*fwk.PreFilterResult, *fwk.Status, fwk.CycleState) {
		state := framework.NewCycleState()
		r, st := p.PreFilter(t.Context(), state, pods[0], nodes)
		return r, st, state
	}
	r, st, state := choose()
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Equal(t, []string{"small"}, sets.List(r.NodeNames), "the tightest rack by capacity")

	// Resource fit, or Grove's own device check, rejected it: that was counted already,
	// nothing is ruled out.
	for _, plugin := range []string{"NodeResourcesFit", "DRA"} {
		_, st = p.PostFilter(t.Context(), state, pods[0], statuses{"small": rejected(plugin, "Insufficient")})
		assert.Equal(t, fwk.Unschedulable, st.Code())
		assert.Empty(t, h.pods)
		r, _, state = choose()
		assert.Equal(t, []string{"small"}, sets.List(r.NodeNames))
	}

	// Anti-affinity rejected it: r0 is ruled out, the gang comes back at once and gets r1.
	_, st = p.PostFilter(t.Context(), state, pods[0], statuses{"small": rejected("InterPodAffinity", "didn't match pod anti-affinity rules")})
	assert.Contains(t, st.Message(), `rack "r0" is ruled out for the gang by InterPodAffinity`)
	assert.Equal(t, []string{"ns/g-0", "ns/g-1"}, sets.List(h.pods), "the gang is tried again in the next rack")
	r, st, state = choose()
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Equal(t, []string{"big-0", "big-1"}, sets.List(r.NodeNames))

	// r1 too (one node by ports, the other by anti-affinity): no rack is left, and the reason
	// names both.
	h.pods.Clear()
	_, _ = p.PostFilter(t.Context(), state, pods[0], statuses{"big-0": rejected("NodePorts", "ports"), "big-1": rejected("InterPodAffinity", "anti")})
	_, st, _ = choose()
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `the PodGang needs 2 pods of 1 CPU within one rack (topology.kubernetes.io/rack); ruled out by filters: rack "r0" (InterPodAffinity), rack "r1" (InterPodAffinity, NodePorts)`, st.Message())

	// Ruling the same rack out again is no news: the gang is not woken up again.
	h.pods.Clear()
	_, _ = p.PostFilter(t.Context(), state, pods[0], statuses{"big-0": rejected("NodePorts", "ports"), "big-1": rejected("InterPodAffinity", "anti")})
	assert.Empty(t, h.pods, "no loop: a domain is ruled out once per room change")

	// A node opened or a pod deleted: what was learned no longer holds.
	p.gangs.RoomChanged()
	r, st, _ = choose()
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Equal(t, []string{"small"}, sets.List(r.NodeNames))
}
