package topology

import (
	"strconv"
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
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// slicedGang is gangSpec whose PodGroup "w" is cut into slices of sizes over racks; its members
// are labelled with their slice in pod index order.
func slicedGang(p *Plugin, name string, required bool, sizes ...int32) []*v1.Pod {
	spec := gangSpec(0, "", "")
	var total int32
	for _, s := range sizes {
		total += s
	}
	spec.PodGroups[0].MinReplicas = total
	spec.PodGroups[0].Slices = &v1alpha1.PodGroupSlices{TopologyKey: rackKey, Required: required, Sizes: sizes}
	index := 0
	slice := func(pod *v1.Pod) {
		i := index
		for s, size := range sizes {
			if i < int(size) {
				pod.Labels[common.LabelSliceIndex] = strconv.Itoa(s)
				break
			}
			i -= int(size)
		}
		index++
	}
	return addGang(p, name, spec, int(total), "1", slice)
}

// rackNodes are racks of one-CPU nodes, <rack>-<n>, with the pods bound to them counted.
func rackNodes(racks map[string]int, bound ...*v1.Pod) []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for _, r := range []string{"r1", "r2", "r3"} {
		for i := range racks[r] {
			name := r + "-" + strconv.Itoa(i)
			var on []*v1.Pod
			for _, b := range bound {
				if b.Spec.NodeName == name {
					on = append(on, b)
				}
			}
			out = append(out, nodeInfo(testNode(name, "1", rackKey, r), on...))
		}
	}
	return out
}

func TestPreFilterKeepsEachSliceInARackOfItsOwn(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := slicedGang(p, "g", true, 2, 2)
	nodes := rackNodes(map[string]int{"r1": 3, "r2": 1, "r3": 2})

	state := framework.NewCycleState()
	res, st := p.PreFilter(t.Context(), state, pods[0], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r3-0", "r3-1"), res.NodeNames, "slice 0 takes the tightest rack that holds it")
	st = p.Filter(t.Context(), state, pods[0], nodeInfo(testNode("r1-0", "1", rackKey, "r1")))
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `node is outside the rack "r3" of the pod's slice`, st.Message())

	res, st = p.PreFilter(t.Context(), framework.NewCycleState(), pods[3], nodes)
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r1-0", "r1-1", "r1-2"), res.NodeNames, "slice 1 takes another rack")
}

func TestPreFilterHoldsARequiredSliceThatFindsNoRack(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := slicedGang(p, "g", true, 2, 2)
	state := framework.NewCycleState()
	_, st := p.PreFilter(t.Context(), state, pods[0], rackNodes(map[string]int{"r1": 3, "r2": 1}))
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `PodGroup "w" needs slices of 2+2 pods, each whole within a rack of its own (`+rackKey+`); `+
		`no rack is left for slice 1 (2 pods); racks with room: "r1" fits 3, "r2" fits 1`, st.Message())
	nd := gangcache.NoDomainIn(state)
	require.NotNil(t, nd)
	assert.Equal(t, "slice", nd.Cause)

	// Preferred, the same gang goes where plain placement puts it: no pack key, so no node
	// is ruled out (Skip), and Filter lets any node pass.
	p = newTestPlugin(t, 50)
	pods = slicedGang(p, "g", false, 2, 2)
	state = framework.NewCycleState()
	_, st = p.PreFilter(t.Context(), state, pods[0], rackNodes(map[string]int{"r1": 3, "r2": 1}))
	require.Equal(t, fwk.Skip, st.Code(), "status: %v", st)
	assert.True(t, p.Filter(t.Context(), state, pods[0], nodeInfo(testNode("r2-0", "1", rackKey, "r2"))).IsSuccess())
}

// A member of slice 1 lost with its node comes back as a new pod with the same slice: it goes
// to the rack its slice still runs in, although r2's free node is a tighter fit.
func TestSliceReplacementGoesBackToItsSlicesRack(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := slicedGang(p, "g", true, 2, 2)
	place := map[int]string{0: "r3-0", 1: "r3-1", 2: "r1-0"}
	var bound []*v1.Pod
	for i, node := range place {
		pods[i].Spec.NodeName = node
		p.gangs.UpsertPod(pods[i])
		bound = append(bound, pods[i])
	}
	res, st := p.PreFilter(t.Context(), framework.NewCycleState(), pods[3], rackNodes(map[string]int{"r1": 3, "r2": 1, "r3": 2}, bound...))
	require.True(t, st.IsSuccess(), "status: %v", st)
	assert.Equal(t, sets.New("r1-0", "r1-1", "r1-2"), res.NodeNames)
}

func TestNodeChangeOfTheSliceKeyRequeues(t *testing.T) {
	p := newTestPlugin(t, 50)
	pods := slicedGang(p, "g", true, 1, 1)
	base := testNode("n", "8", rackKey, "r1", zoneKey, "z1")
	moved := base.DeepCopy()
	moved.Labels[rackKey] = "r9"
	rezoned := base.DeepCopy()
	rezoned.Labels[zoneKey] = "z9"
	for name, tc := range map[string]struct {
		new  *v1.Node
		want fwk.QueueingHint
	}{
		"the slice key changed":                      {new: moved, want: fwk.Queue},
		"a key the gang neither packs nor slices by": {new: rezoned, want: fwk.QueueSkip},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := p.isSchedulableAfterNodeChange(klog.Background(), pods[0], base, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
