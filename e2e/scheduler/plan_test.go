package schedulere2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// TestGangMembersGoToTheirPlannedNodes: in a real scheduler, the first member of a gang
// attempt plans the nodes of the rest of its PodGroup and the others are handed their planned
// node (the framework filters one node and skips Score for them). The members carry the
// operator's per-pod index label, which is part of their scheduling signature: they are still
// planned as alike, unless a pod in the cluster has affinity terms that select on that label.
func TestGangMembersGoToTheirPlannedNodes(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.addNodes(node{name: "n1", cpu: "4"}, node{name: "n2", cpu: "4"}, node{name: "n3", cpu: "4"})
	indexed := func(p *v1.Pod) {
		p.Labels[common.LabelPodCliquePodIndex] = p.Name[strings.LastIndex(p.Name, "-")+1:]
	}
	before := handedOut(t)
	e.createGang(gang{name: "planned", groups: []group{{name: "w", min: 4, replicas: 4, cpu: "1", pod: indexed}}})
	assert.Equal(t, 0, e.waitBound("planned", 4).pending)
	assert.Equal(t, 3.0, handedOut(t)-before, "the three members after the first narrowed to their planned node")

	// A pod whose anti-affinity selects on the index: the index now matters to the filters, and
	// members with different indices are not alike.
	picky := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "picky", Namespace: e.ns},
		Spec: v1.PodSpec{SchedulerName: e.schedulerName, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				TopologyKey:   v1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{common.LabelPodCliquePodIndex: "7"}},
			}}}}},
	}
	_, err := e.admin.CoreV1().Pods(e.ns).Create(e.ctx, picky, metav1.CreateOptions{})
	require.NoError(t, err)
	e.eventually("picky bound", func() (bool, string) {
		p, err := e.admin.CoreV1().Pods(e.ns).Get(e.ctx, "picky", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", "pending"
	})
	before = handedOut(t)
	e.createGang(gang{name: "unplanned", groups: []group{{name: "w", min: 3, replicas: 3, cpu: "1", pod: indexed}}})
	assert.Equal(t, 0, e.waitBound("unplanned", 3).pending)
	assert.Equal(t, 0.0, handedOut(t)-before, "no member planned")
}

// handedOut reads grove_scheduler_member_plans_total{outcome="handed_out"} of the scheduler in
// this process.
func handedOut(t *testing.T) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "grove_scheduler_member_plans_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == "handed_out" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
