package topology

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

const (
	rackKey = "topology.kubernetes.io/rack"
	zoneKey = "topology.kubernetes.io/zone"
)

// newTestPlugin is the one place tests build the plugin: over an empty gang cache, fed by the
// tests through its exported methods, with the given preferred-domain weight.
func newTestPlugin(t testing.TB, weight int32) *Plugin {
	t.Helper()
	gangs := &gangcache.Shared{Cache: gangcache.New()}
	return &Plugin{args: pluginargs.TopologyArgs{PreferredDomainWeight: weight}, gangs: gangs}
}

// gangSpec is one PodGroup "w" of minReplicas min, packed by required and preferred ("" for
// none).
func gangSpec(minReplicas int32, required, preferred string) v1alpha1.PodGangSpec {
	spec := v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: minReplicas}}}
	if required != "" || preferred != "" {
		pc := &v1alpha1.TopologyPackConstraint{}
		if required != "" {
			pc.Required = ptr.To(required)
		}
		if preferred != "" {
			pc.Preferred = ptr.To(preferred)
		}
		spec.TopologyConstraint = &v1alpha1.TopologyConstraint{PackConstraint: pc}
	}
	return spec
}

// addGang records PodGang ns/name and its members (pending, each asking for cpu millicores),
// and returns the members; change, if given, edits each member before it is recorded.
func addGang(p *Plugin, name string, spec v1alpha1.PodGangSpec, members int, cpu string, change ...func(*v1.Pod)) []*v1.Pod {
	p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pg-" + name), Generation: 1}, Spec: spec})
	var pods []*v1.Pod
	for i := range members {
		pod := member(fmt.Sprintf("%s-%d", name, i), name, cpu)
		for _, c := range change {
			c(pod)
		}
		p.gangs.UpsertPod(pod)
		pods = append(pods, pod)
	}
	return pods
}

func member(name, gang, cpu string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	if gang != "" {
		pod.Labels = map[string]string{common.LabelPodGang: gang, common.LabelPodClique: "w"}
	}
	return pod
}

// testNode is a node with cpu allocatable and labels (key, value pairs).
func testNode(name, cpu string, labels ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Gi"), v1.ResourcePods: resource.MustParse("110")}}}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

// nodeInfo is the scheduler's view of node with pods on it.
func nodeInfo(node *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
