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

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The first PodGang of a PodCliqueSet replica placed chooses the replica's block for every
// PodGang of it that exists: the 4-node block holds the base gang alone, only the 8-node block
// holds the scaled ones too.
func TestFirstGangOfAGroupChoosesTheBlockForTheGroup(t *testing.T) {
	p := newTestPlugin(t, 0)
	shared := &v1alpha1.SharedTopologyConstraint{Group: "p-0", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(zoneKey)}}
	spec := func(quorum int32) v1alpha1.PodGangSpec {
		s := gangSpec(quorum, "", "")
		s.SharedTopologyConstraint = shared
		return s
	}
	onGroup := func(group string) func(*v1.Pod) {
		return func(pod *v1.Pod) { pod.Labels[common.LabelPodClique] = group }
	}
	base := addGang(p, "p-0", spec(3), 3, "1")
	for i := range 4 {
		s := spec(1)
		s.PodGroups[0].Name = fmt.Sprintf("s%d", i)
		addGang(p, fmt.Sprintf("p-0-sg-%d", i), s, 1, "1", onGroup(fmt.Sprintf("s%d", i)))
	}
	var nodes []fwk.NodeInfo
	for i := range 4 {
		nodes = append(nodes, nodeInfo(testNode(fmt.Sprintf("small-%d", i), "1", zoneKey, "small")))
	}
	for i := range 8 {
		nodes = append(nodes, nodeInfo(testNode(fmt.Sprintf("big-%d", i), "1", zoneKey, "big")))
	}
	r, st := p.PreFilter(t.Context(), framework.NewCycleState(), base[0], nodes)
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Len(t, r.NodeNames, 8)
	assert.True(t, r.NodeNames.Has("big-0"), "the block that holds the whole group: %v", sets.List(r.NodeNames))
}
