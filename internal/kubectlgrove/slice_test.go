package kubectlgrove

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The slices of a PodClique: which slice runs in which rack, whole or not, and how many of its
// pods are bound.
func TestRenderSlices(t *testing.T) {
	const rackKey = "example.com/rack"
	ct := &corev1alpha1.ClusterTopology{Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: rackKey}}}}
	node := func(name, rack string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{rackKey: rack}}}
	}
	nodes := []corev1.Node{node("a", "r0"), node("b", "r0"), node("c", "r1"), node("d", "r2")}
	pod := func(name, group, slice, nodeName string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{common.LabelPodClique: group, common.LabelSliceIndex: slice}}, Spec: corev1.PodSpec{NodeName: nodeName}}
	}
	gang := func(group string, required bool, sizes ...int32) schedv1alpha1.PodGang {
		return schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: group + "-gang"}, Spec: schedv1alpha1.PodGangSpec{
			PodGroups: []schedv1alpha1.PodGroup{{Name: group, Slices: &schedv1alpha1.PodGroupSlices{TopologyKey: rackKey, Required: required, Sizes: sizes}}}}}
	}
	pods := []corev1.Pod{
		pod("w-0", "w", "0", "a"), pod("w-1", "w", "0", "b"), pod("w-2", "w", "1", "c"), pod("w-3", "w", "1", ""),
		pod("p-0", "p", "0", "a"), pod("p-1", "p", "0", "d"),
	}
	var out bytes.Buffer
	renderSlices(&out, ct, nodes, pods, []schedv1alpha1.PodGang{gang("w", true, 2, 2), gang("p", false, 2, 1)})
	assert.Equal(t, "slices ns/p over rack (preferred): slice 0 (2 pods): r0 1, r2 1 (2/2); slice 1 (1 pods): not placed (0/1)\n"+
		"slices ns/w over rack (required): slice 0 (2 pods): r0 2/2; slice 1 (2 pods): r1 1/2\n", out.String())
}
