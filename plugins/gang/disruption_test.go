package gang

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestDisruptionOverOnlyOnceTheGangIsScheduledAfterItsPreemption(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	marked := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.PodGangConditionDisruptionTarget, Status: status, LastTransitionTime: at(time.Minute)}}
	}
	scheduled := func(status metav1.ConditionStatus, since time.Duration) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.PodGangConditionScheduled, Status: status, LastTransitionTime: at(since)}
	}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		scheduled  *metav1.Condition
		want       bool
	}{
		{"never preempted", nil, scheduled(metav1.ConditionTrue, 2*time.Minute), false},
		{"preempted, still scheduled from before", marked(metav1.ConditionTrue), scheduled(metav1.ConditionTrue, 0), false},
		{"preempted, waiting again", marked(metav1.ConditionTrue), scheduled(metav1.ConditionFalse, 2*time.Minute), false},
		{"preempted, placed again", marked(metav1.ConditionTrue), scheduled(metav1.ConditionTrue, 2*time.Minute), true},
		{"already cleared", marked(metav1.ConditionFalse), scheduled(metav1.ConditionTrue, 2*time.Minute), false},
		{"nothing to write yet", marked(metav1.ConditionTrue), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := &v1alpha1.PodGang{Status: v1alpha1.PodGangStatus{Conditions: tc.conditions}}
			assert.Equal(t, tc.want, disruptionOver(pg, tc.scheduled))
		})
	}
}
