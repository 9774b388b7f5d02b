package nodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

func TestEligibilityFor(t *testing.T) {
	gpuTaint := v1.Taint{Key: "gpu", Effect: v1.TaintEffectNoSchedule}
	cases := []struct {
		name string
		pod  v1.PodSpec
		node v1.Node
		want bool
	}{
		{"plain node", v1.PodSpec{}, v1.Node{}, true},
		{"cordoned", v1.PodSpec{}, v1.Node{Spec: v1.NodeSpec{Unschedulable: true}}, false},
		{"cordoned but tolerated", v1.PodSpec{Tolerations: []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists}}},
			v1.Node{Spec: v1.NodeSpec{Unschedulable: true}}, true},
		{"NoSchedule taint", v1.PodSpec{}, v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{gpuTaint}}}, false},
		{"tolerated taint", v1.PodSpec{Tolerations: []v1.Toleration{{Key: "gpu", Operator: v1.TolerationOpExists}}},
			v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{gpuTaint}}}, true},
		{"PreferNoSchedule is soft", v1.PodSpec{}, v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "x", Effect: v1.TaintEffectPreferNoSchedule}}}}, true},
		{"node selector mismatch", v1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}}, v1.Node{}, false},
		{"node selector match", v1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}},
			v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "gpu"}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, EligibilityFor(&v1.Pod{Spec: tc.pod})(&tc.node))
		})
	}
}

func TestClassesGroupEqualRules(t *testing.T) {
	gpuTaint := v1.Taint{Key: "gpu", Effect: v1.TaintEffectNoSchedule}
	cpuNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "cpu"}}}
	gpuNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "gpu"}}, Spec: v1.NodeSpec{Taints: []v1.Taint{gpuTaint}}}
	router := &v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{"pool": "cpu"}}}
	worker := &v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"},
		Tolerations: []v1.Toleration{{Key: "gpu", Operator: v1.TolerationOpExists}}}}
	otherWorker := worker.DeepCopy()

	var c Classes
	assert.Equal(t, 0, c.Of(RulesOf(router)))
	assert.Equal(t, 1, c.Of(RulesOf(worker)))
	assert.Equal(t, 1, c.Of(RulesOf(otherWorker)), "equal rules share a class")
	assert.Equal(t, 2, c.Of(RulesOf(&v1.Pod{})), "no rules is a class of its own")
	assert.Equal(t, capacity.ClassMask(0)|capacity.ClassMask(2), c.Allowed(cpuNode), "the GPU taint keeps unrelated pods off")
	assert.Equal(t, capacity.ClassMask(1), c.Allowed(gpuNode))
}
