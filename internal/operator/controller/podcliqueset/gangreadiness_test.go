package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestGangReadinessIsWrittenOnlyWhenItSaysSomethingNew walks a gang of two pods from created
// to Ready and counts the status writes the readiness writer makes: one when the gang is
// placed (Ready=False with lastScheduled) and one when it is ready, none while it waits for a
// node and none when the first of its two pods turns Ready.
func TestGangReadinessIsWrittenOnlyWhenItSaysSomethingNew(t *testing.T) {
	pg := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: "g", Generation: 1},
		Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: "w", MinReplicas: 2}}}}
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	pod := func(name string, bound, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{apicommon.LabelPodClique: "w"}}}
		if bound {
			p.Spec.NodeName = "n"
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
				Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Second))})
		}
		if ready {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady,
				Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(3 * time.Second))})
		}
		return p
	}
	steps := []struct {
		name  string
		pods  []*corev1.Pod
		write bool
	}{
		{"created, not placed", []*corev1.Pod{pod("a", false, false), pod("b", false, false)}, false},
		{"one placed", []*corev1.Pod{pod("a", true, false), pod("b", false, false)}, false},
		{"both placed", []*corev1.Pod{pod("a", true, false), pod("b", true, false)}, true},
		{"one ready", []*corev1.Pod{pod("a", true, true), pod("b", true, false)}, false},
		{"both ready", []*corev1.Pod{pod("a", true, true), pod("b", true, true)}, true},
		{"nothing new", []*corev1.Pod{pod("a", true, true), pod("b", true, true)}, false},
	}
	for _, s := range steps {
		want := observeGangReadiness(pg, s.pods)
		if !assert.Equal(t, s.write, want.due(pg), s.name) || !s.write {
			continue
		}
		// What applyGangReadiness stores.
		cond := want.ready
		cond.ObservedGeneration = pg.Generation
		meta.SetStatusCondition(&pg.Status.Conditions, cond)
		pg.Status.LastScheduled, pg.Status.LastReady = want.lastScheduled, want.lastReady
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, schedv1alpha1.PodGangConditionReady)
	if assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionTrue, c.Status)
	}
	assert.NotNil(t, pg.Status.LastScheduled)
	assert.NotNil(t, pg.Status.LastReady)
}
