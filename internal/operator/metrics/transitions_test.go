package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestRollingUpdateEnded(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(90 * time.Second))
	t2 := metav1.NewTime(t0.Add(10 * time.Minute))
	pcs := func(p *corev1alpha1.PodCliqueSetUpdateProgress) *corev1alpha1.PodCliqueSet {
		return &corev1alpha1.PodCliqueSet{Status: corev1alpha1.PodCliqueSetStatus{UpdateProgress: p}}
	}
	running := &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0}
	done := &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0, UpdateEndedAt: &t1}
	nextRunning := &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t2}
	nextDone := &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t2, UpdateEndedAt: ptrTime(t2.Add(30 * time.Second))}
	for _, tc := range []struct {
		name     string
		old, new *corev1alpha1.PodCliqueSet
		want     time.Duration
		ended    bool
	}{
		{"never updated", pcs(nil), pcs(nil), 0, false},
		{"update starts", pcs(nil), pcs(running), 0, false},
		{"update ends", pcs(running), pcs(done), 90 * time.Second, true},
		{"finished update resynced", pcs(done), pcs(done), 0, false},
		{"next update starts", pcs(done), pcs(nextRunning), 0, false},
		{"next update ends", pcs(nextRunning), pcs(nextDone), 30 * time.Second, true},
		// A watch that skipped the running state still sees a new update end.
		{"finished update replaced by a finished one", pcs(done), pcs(nextDone), 30 * time.Second, true},
		{"first seen finished", pcs(nil), pcs(done), 90 * time.Second, true},
		// An OnDelete update ends as it starts: no rolling update to report.
		{"OnDelete update ended", pcs(nil), onDelete(pcs(&corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0, UpdateEndedAt: &t0})), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ended := RollingUpdateEnded(tc.old, tc.new)
			assert.Equal(t, tc.ended, ended)
			assert.Equal(t, tc.want, got)
		})
	}
}

func onDelete(p *corev1alpha1.PodCliqueSet) *corev1alpha1.PodCliqueSet {
	p.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.OnDeleteStrategy}
	return p
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func TestStartupWaitEnded(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := func(name string, state corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: name, State: state}}}}
	}
	waiting := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}
	done := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, StartedAt: t0, FinishedAt: metav1.NewTime(t0.Add(12 * time.Second))}}
	failed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, StartedAt: t0, FinishedAt: metav1.NewTime(t0.Add(time.Second))}}
	w := apicommon.StartupWaiterContainerName
	for _, tc := range []struct {
		name     string
		old, new *corev1.Pod
		want     time.Duration
		ended    bool
	}{
		{"waiter still waiting", pod(w, waiting), pod(w, waiting), 0, false},
		{"waiter completes", pod(w, waiting), pod(w, done), 12 * time.Second, true},
		{"completed waiter resynced", pod(w, done), pod(w, done), 0, false},
		{"waiter fails", pod(w, waiting), pod(w, failed), 0, false},
		{"another init container completes", pod("setup", waiting), pod("setup", done), 0, false},
		{"pod without init containers", &corev1.Pod{}, &corev1.Pod{}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ended := StartupWaitEnded(tc.old, tc.new)
			assert.Equal(t, tc.ended, ended)
			assert.Equal(t, tc.want, got)
		})
	}
}
