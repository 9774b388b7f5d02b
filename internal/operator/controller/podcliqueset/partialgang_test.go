package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestObservePartial(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gang := &schedv1alpha1.PodGang{Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{
		{Name: "leader", MinReplicas: 1}, {Name: "worker", MinReplicas: 2},
	}}}
	pod := func(name, group string, boundAt *time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{apicommon.LabelPodClique: group},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
		if boundAt != nil {
			p.Spec.NodeName = "n"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*boundAt)}}
		}
		return p
	}
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	cases := []struct {
		name    string
		members []*corev1.Pod
		placed  map[string]bool
		// want lists the bound members of a partly bound gang; nil when it is not one.
		want      []string
		wantSince time.Time
	}{
		{"nothing bound", []*corev1.Pod{pod("l", "leader", nil), pod("w0", "worker", nil), pod("w1", "worker", nil)}, nil, nil, time.Time{}},
		{"complete", []*corev1.Pod{pod("l", "leader", at(0)), pod("w0", "worker", at(0)), pod("w1", "worker", at(0))}, nil, nil, time.Time{}},
		{"only an elastic pod waits", []*corev1.Pod{pod("l", "leader", at(0)), pod("w0", "worker", at(0)), pod("w1", "worker", at(0)), pod("w2", "worker", nil)}, nil, nil, time.Time{}},
		{"a worker short", []*corev1.Pod{pod("w1", "worker", at(2*time.Second)), pod("l", "leader", at(time.Second)), pod("w0", "worker", nil)}, nil,
			[]string{"l", "w1"}, t0.Add(time.Second)},
		{"a PodGroup with nothing bound", []*corev1.Pod{pod("w0", "worker", at(0)), pod("w1", "worker", at(0)), pod("l", "leader", nil)},
			map[string]bool{"worker": true}, []string{"w0", "w1"}, t0},
		{"once complete: gang termination's", []*corev1.Pod{pod("l", "leader", at(0)), pod("w0", "worker", at(0)), pod("w1", "worker", nil)},
			map[string]bool{"leader": true, "worker": true}, nil, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := observePartial(gang, tc.members, tc.placed)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				var names []string
				for _, p := range got.bound {
					names = append(names, p.Name)
				}
				assert.Equal(t, tc.want, names)
				assert.Equal(t, tc.wantSince, got.since)
				assert.NotEmpty(t, got.short)
			}
		})
	}
}
