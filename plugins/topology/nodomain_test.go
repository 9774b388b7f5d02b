package topology

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

func rackNode(name, rack string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": rack}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourcePods: resource.MustParse("10")}}})
	return ni
}

// A gang no domain can hold is turned away in PreFilter, and the gang plugin is told so through
// the cycle state (not by this plugin's name).
func TestPreFilterTellsNoDomainInTheCycleState(t *testing.T) {
	gangs := &gangcache.Shared{Cache: gangcache.New()}
	p := &Plugin{gangs: gangs}
	gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "g-uid", Generation: 1},
		Spec: v1alpha1.PodGangSpec{
			PodGroups:          []v1alpha1.PodGroup{{Name: "w", MinReplicas: 2}},
			TopologyConstraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To("rack")}},
		}})
	var pods []*v1.Pod
	for i := range 2 {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("w-%d", i), UID: types.UID(fmt.Sprintf("w-%d", i)),
			Labels: map[string]string{common.LabelPodGang: "g", common.LabelPodClique: "w"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}}}
		gangs.UpsertPod(pod)
		pods = append(pods, pod)
	}

	// Two racks of one CPU each: no rack holds two one-CPU members.
	state := framework.NewCycleState()
	_, st := p.PreFilter(t.Context(), state, pods[0], []fwk.NodeInfo{rackNode("a", "r1"), rackNode("b", "r2")})
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	nd := gangcache.NoDomainIn(state)
	require.NotNil(t, nd)
	assert.Equal(t, st.Message(), nd.Reason)

	// A rack that holds the gang: nothing is told.
	state = framework.NewCycleState()
	_, st = p.PreFilter(t.Context(), state, pods[0], []fwk.NodeInfo{rackNode("a", "r1"), rackNode("b", "r1")})
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Nil(t, gangcache.NoDomainIn(state))
}
