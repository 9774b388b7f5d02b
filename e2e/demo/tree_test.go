package demo

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

func pod(name, gang, clique, idx, node string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			common.LabelPodGang: gang, common.LabelPodClique: clique, common.LabelPodCliquePodIndex: idx}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func TestRenderShowsGangsCliquesPodsAndPlacement(t *testing.T) {
	gang := func(name string, scheduled metav1.ConditionStatus, msg string, groups ...string) schedv1alpha1.PodGang {
		g := schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{common.LabelPodCliqueSetReplicaIndex: "0"}}}
		for _, n := range groups {
			g.Spec.PodGroups = append(g.Spec.PodGroups, schedv1alpha1.PodGroup{Name: n, MinReplicas: 1})
		}
		g.Status.Phase = schedv1alpha1.PodGangPhaseRunning
		g.Status.Conditions = []metav1.Condition{{Type: "Scheduled", Status: scheduled, Message: msg}}
		return g
	}
	s := &Snapshot{
		PCS:   &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "disagg"}, Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1}},
		Gangs: []schedv1alpha1.PodGang{gang("disagg-0", "True", "", "disagg-0-router"), gang("disagg-0-workers-0", "False", "needs 4 GPUs within one rack", "disagg-0-workers-1-prefill")},
		Pods: []corev1.Pod{
			pod("disagg-0-router-abc", "disagg-0", "disagg-0-router", "0", "z0-b0-r0-h0"),
			pod("disagg-0-workers-1-prefill-xyz", "disagg-0-workers-0", "disagg-0-workers-1-prefill", "0", ""),
		},
		Nodes: map[string]*corev1.Node{"z0-b0-r0-h0": {ObjectMeta: metav1.ObjectMeta{Name: "z0-b0-r0-h0",
			Labels: map[string]string{"rack": "z0-b0-r0", "block": "z0-b0"}}}},
		RackKey: "rack", BlockKey: "block",
	}
	var out bytes.Buffer
	s.Render(&out)
	got := out.String()
	for _, want := range []string{
		"PodCliqueSet ns/disagg  replicas=1",
		"└─ replica 0",
		"├─ PodGang disagg-0  phase=Running scheduled=True",
		"└─ PodGang disagg-0-workers-0  phase=Running scheduled=False",
		"reason: needs 4 GPUs within one rack",
		"PodClique disagg-0-router  min=1 pods=1",
		"node=z0-b0-r0-h0 rack=z0-b0-r0 block=z0-b0",
		"(not placed)",
	} {
		assert.Contains(t, got, want)
	}
}
