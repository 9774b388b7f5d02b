package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

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
		if !assert.Equal(t, s.write, want.due(pg) == due, s.name) || !s.write {
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

// TestGangReadinessGenerationOnlyIsPutOff: a new generation (an update's pod-list patch) while
// the stored condition is still right is a generation-only write, put off for generationGrace
// from the first pass that saw it, and written once the grace is over.
func TestGangReadinessGenerationOnlyIsPutOff(t *testing.T) {
	pg := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: "g", UID: "u", Generation: 2},
		Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: "w", MinReplicas: 1}}}}
	pg.Status.Conditions = []metav1.Condition{{Type: schedv1alpha1.PodGangConditionReady, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonInsufficientReadyPods, Message: "PodGroups below minReplicas ready: w", ObservedGeneration: 1}}
	want := observeGangReadiness(pg, nil)
	assert.Equal(t, generationOnly, want.due(pg))

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
	c := &gangReadiness{r: &Reconciler{clock: clk}}
	assert.Equal(t, generationGrace, c.putOff(pg), "first sighting: the whole grace")
	clk.Step(4 * time.Second)
	pg.Generation = 3
	assert.Equal(t, generationGrace-4*time.Second, c.putOff(pg), "a newer generation does not restart the grace")
	clk.Step(generationGrace)
	assert.Zero(t, c.putOff(pg), "grace over: written")
}
