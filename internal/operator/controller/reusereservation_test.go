package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"
)

// TestUpdateNamesTheEarlierPlacement: while an update replaces the pods of a PodGang that has been
// placed (status.lastPlacement, written here as grove-scheduler would), the operator points the
// PodGang's spec.reuseReservationRef at itself and carries the PodCliqueSet's reuseReservation
// policy; a PodGang never placed gets no reference, and the reference goes when the update ends.
func TestUpdateNamesTheEarlierPlacement(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "reuse", 1)
	pcs.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{ReuseReservation: corev1alpha1.ReuseReservationRequired}
	e.create(pcs)
	sched := e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		assert.EqualValues(c, 1, e.pcs(c, "reuse").Status.AvailableReplicas)
	})
	node := e.pods("reuse-0-router")[0].Spec.NodeName
	placed := schedulerac.PodGang("reuse-0", e.ns).WithStatus(schedulerac.PodGangStatus().
		WithLastPlacement(schedulerac.PodGangPlacement().WithNodes(node)))
	require.NoError(t, e.c.Status().Apply(e.ctx, placed, client.FieldOwner(apicommon.SchedulerFieldManager), client.ForceOwnership))
	require.Nil(t, e.podGang(t, "reuse-0").Spec.ReuseReservationRef, "no update yet")

	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "reuse-0")
		if assert.NotNil(c, pg.Spec.ReuseReservationRef) {
			assert.Equal(c, "reuse-0", pg.Spec.ReuseReservationRef.Name)
			assert.Equal(c, e.ns, pg.Spec.ReuseReservationRef.Namespace)
		}
		assert.Equal(c, "Required", pg.Annotations[apicommon.AnnotationReuseReservation])
	})
	assert.Nil(t, e.podGang(t, "reuse-0-workers-0").Spec.ReuseReservationRef, "a PodGang never placed has nothing to reuse")

	sched.pause(false)
	e.waitUpdated("reuse", 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Nil(c, e.podGang(c, "reuse-0").Spec.ReuseReservationRef, "outside an update nothing is reused")
	})
}
