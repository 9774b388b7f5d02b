package preemption

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// noWaitingPods is a handle on which no pod waits at Permit.
type noWaitingPods struct{ fwk.Handle }

func (noWaitingPods) GetWaitingPod(types.UID) fwk.WaitingPod { return nil }

// Issue 42: a gang with one tiny high-priority pod and three big low-priority pods preempts with
// its lowest quorum member's priority, so a mid-priority gang is no victim of it — whichever
// member is attempted.
func TestGangPreemptsWithItsLowestQuorumPriority(t *testing.T) {
	gangs := &gangcache.Shared{Cache: gangcache.New()}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	p := &Plugin{handle: noWaitingPods{}, gangs: gangs, pods: corelisters.NewPodLister(indexer)}
	member := func(gang, group, name string, prio int32, node string) *v1.Pod {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{common.LabelPodGang: gang, common.LabelPodClique: group}},
			Spec: v1.PodSpec{Priority: ptr.To(prio), NodeName: node, Containers: []v1.Container{{Name: "c",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}}}
		gangs.UpsertPod(pod)
		require.NoError(t, indexer.Add(pod))
		return pod
	}
	gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mixed", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "router", MinReplicas: 1}, {Name: "worker", MinReplicas: 3}}}})
	tiny := member("mixed", "router", "router-0", 1000000, "")
	var big *v1.Pod
	for _, name := range []string{"worker-0", "worker-1", "worker-2"} {
		big = member("mixed", "worker", name, 10, "")
	}
	gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mid", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "m", MinReplicas: 1}}}})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	ni := framework.NewNodeInfo(member("mid", "m", "mid-0", 1000, "n1"))
	ni.SetNode(node)

	g, ok := gangs.Get("ns/mixed")
	require.True(t, ok)
	for _, attempted := range []*v1.Pod{tiny, big} {
		preemptor := p.gangPreemptor("ns/mixed", attempted, g)
		assert.Equal(t, int32(10), preemptor.priority, "attempting %s", attempted.Name)
		units, _, _ := p.victimUnits([]fwk.NodeInfo{ni}, preemptor)
		assert.Empty(t, units, "attempting %s: the mid-priority gang outranks the gang's low-priority quorum", attempted.Name)
	}

	// The same gang made of high-priority pods only does preempt the mid-priority gang.
	gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "high", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "router", MinReplicas: 1}}}})
	high := member("high", "router", "high-0", 1000000, "")
	hg, _ := gangs.Get("ns/high")
	preemptor := p.gangPreemptor("ns/high", high, hg)
	assert.Equal(t, int32(1000000), preemptor.priority)
	units, _, _ := p.victimUnits([]fwk.NodeInfo{ni}, preemptor)
	if assert.Len(t, units, 1) {
		assert.Equal(t, "PodGang ns/mid", units[0].Key)
	}
}
