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

// TestRenderScalingGroupSpread: a scaling-group replica inside a base PodGang is placed by its
// own PodGroups' pods only, not by the rest of the base PodGang (fe in r2).
func TestRenderScalingGroupSpread(t *testing.T) {
	ct := &corev1alpha1.ClusterTopology{Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "r"}}}}
	node := func(name, rack string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"r": rack}}}
	}
	pod := func(gang, clique, nodeName string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: clique, Labels: map[string]string{
			common.LabelPodGang: gang, common.LabelPodClique: clique}}, Spec: corev1.PodSpec{NodeName: nodeName}}
	}
	entry := func(member string, groups ...string) schedv1alpha1.ReplicaSpreadConstraint {
		return schedv1alpha1.ReplicaSpreadConstraint{Group: "p-0-d", Member: member, TopologyKey: "r", Required: true, PodGroupNames: groups}
	}
	gangs := []schedv1alpha1.PodGang{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0"}, Spec: schedv1alpha1.PodGangSpec{
			ReplicaSpreadConstraints: []schedv1alpha1.ReplicaSpreadConstraint{entry("p-0-d-0", "p-0-d-0-w")}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-d-0"}, Spec: schedv1alpha1.PodGangSpec{
			ReplicaSpreadConstraints: []schedv1alpha1.ReplicaSpreadConstraint{entry("p-0-d-1")}}},
	}
	var out bytes.Buffer
	renderSpread(&out, ct, []corev1.Node{node("n0", "r0"), node("n1", "r1"), node("n2", "r2")},
		[]corev1.Pod{pod("p-0", "p-0-fe", "n2"), pod("p-0", "p-0-d-0-w", "n0"), pod("p-0-d-0", "p-0-d-1-w", "n1")}, gangs)
	assert.Equal(t, "replica spread ns/p-0-d over rack (required): r0: p-0-d-0; r1: p-0-d-1; unused: r2; skew 1\n", out.String())
}
