package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestPodGangStatusesFollowThePodGangs: status.podGangStatuses (upstream Grove's shape) lists
// every PodGang of the PodCliqueSet with its phase and conditions, and follows a status change
// written by the scheduler.
func TestPodGangStatusesFollowThePodGangs(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "gangs", 1))
	statuses := func(c require.TestingT) []corev1alpha1.PodGangStatus {
		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "gangs"}, pcs))
		return pcs.Status.PodGangStatutes
	}
	e.eventually(func(c *assert.CollectT) {
		var names []string
		for _, s := range statuses(c) {
			names = append(names, s.Name)
			assert.Equal(c, string(schedv1alpha1.PodGangPhasePending), s.Phase, s.Name)
		}
		assert.Equal(c, []string{"gangs-0", "gangs-0-workers-0"}, names)
	})

	// The scheduler reports the base gang scheduled.
	pg := e.podGang(t, "gangs-0")
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Status.Phase = schedv1alpha1.PodGangPhaseRunning
	meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: schedv1alpha1.PodGangConditionScheduled, Status: metav1.ConditionTrue,
		Reason: "Scheduled", Message: "placed", ObservedGeneration: pg.Generation})
	require.NoError(t, e.c.Status().Patch(e.ctx, pg, patch))
	e.eventually(func(c *assert.CollectT) {
		got := statuses(c)
		if assert.Len(c, got, 2) {
			assert.Equal(c, string(schedv1alpha1.PodGangPhaseRunning), got[0].Phase)
			assert.True(c, meta.IsStatusConditionTrue(got[0].Conditions, schedv1alpha1.PodGangConditionScheduled))
		}
	})
}
