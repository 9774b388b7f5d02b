package nodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOpened(t *testing.T) {
	base := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "cpu"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}}}
	with := func(change func(*v1.Node)) *v1.Node {
		n := base.DeepCopy()
		change(n)
		return n
	}
	anywhere := RulesOf(&v1.Pod{})
	onGPU := RulesOf(&v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}}})
	tainted := with(func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "x", Effect: v1.TaintEffectNoSchedule}} })
	bigger := with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("8") })
	cases := []struct {
		name     string
		old, new *v1.Node
		rules    []Rules
		want     bool
	}{
		{"a new node", nil, base, []Rules{onGPU}, true},
		{"no node", base, nil, []Rules{anywhere}, false},
		{"more allocatable", base, bigger, []Rules{anywhere}, true},
		{"more allocatable where no rule may go", base, bigger, []Rules{onGPU}, false},
		{"more allocatable where one of the rules may go", base, bigger, []Rules{onGPU, anywhere}, true},
		{"a new resource", base, with(func(n *v1.Node) { n.Status.Allocatable["example.com/gpu"] = resource.MustParse("1") }), []Rules{anywhere}, true},
		{"less allocatable", bigger, base, []Rules{anywhere}, false},
		{"taint lifted", tainted, base, []Rules{anywhere}, true},
		{"taint added", base, tainted, []Rules{anywhere}, false},
		{"relabelled into a selected pool", base, with(func(n *v1.Node) { n.Labels["pool"] = "gpu" }), []Rules{onGPU}, true},
		{"relabelled, nobody selects it", base, with(func(n *v1.Node) { n.Labels["team"] = "a" }), []Rules{anywhere, onGPU}, false},
		{"no rules", base, bigger, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Opened(tc.old, tc.new, tc.rules))
		})
	}
}
