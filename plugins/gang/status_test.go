package gang

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// The status writer says only what a user can act on, and spends no API write on the moment
// between the barrier's release and the last binding.
func TestDesiredStatus(t *testing.T) {
	scheduledFalse := &metav1.Condition{Type: v1alpha1.PodGangConditionScheduled, Status: metav1.ConditionFalse, Reason: common.ReasonUnschedulable}
	tests := []struct {
		name  string
		group ledger.GroupState
		// age is the PodGang's; membersAge its first member pod's (none when 0).
		age        time.Duration
		membersAge time.Duration
		existing   *metav1.Condition
		wantWrite  bool
		wantPhase  v1alpha1.PodGangPhase
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "not attempted yet", group: ledger.GroupState{Min: 8, Present: 8}},
		{name: "new, its pods still being created", group: ledger.GroupState{Min: 8, Present: 3}, age: time.Second, membersAge: time.Second},
		{name: "old PodGang whose pods just started to arrive", group: ledger.GroupState{Min: 8, Present: 3}, age: time.Minute, membersAge: time.Second},
		{name: "no pod of it exists: nothing to place", group: ledger.GroupState{Min: 8}, age: time.Hour},
		{name: "its pods missing for a while", group: ledger.GroupState{Min: 8, Present: 3}, age: time.Minute, membersAge: time.Minute,
			wantWrite: true, wantPhase: v1alpha1.PodGangPhasePending,
			wantStatus: metav1.ConditionFalse, wantReason: common.ReasonWaitingForPods},
		{name: "members waiting at the barrier", group: ledger.GroupState{Min: 8, Present: 8, Assumed: 5},
			existing: scheduledFalse, wantWrite: true, wantPhase: v1alpha1.PodGangPhasePending,
			wantStatus: metav1.ConditionFalse, wantReason: common.ReasonInsufficientScheduledPods},
		{name: "quorum released, bindings in flight", group: ledger.GroupState{Min: 8, Present: 8, Assumed: 3, Bound: 5}},
		{name: "quorum released after an earlier failure", group: ledger.GroupState{Min: 8, Present: 8, Assumed: 8},
			existing: scheduledFalse},
		{name: "quorum bound", group: ledger.GroupState{Min: 8, Present: 10, Assumed: 1, Bound: 8},
			wantWrite: true, wantPhase: v1alpha1.PodGangPhaseStarting,
			wantStatus: metav1.ConditionTrue, wantReason: common.ReasonSufficientScheduledPods},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(metav1.Now().Time)
			w := &statusWriter{ledger: ledger.New(clk, ledger.Policy{}), clock: clk}
			pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g",
				CreationTimestamp: metav1.NewTime(clk.Now().Add(-tt.age))}}
			if tt.existing != nil {
				pg.Status.Conditions = []metav1.Condition{*tt.existing}
			}
			tt.group.Name = "workers"
			g := gangcache.Gang{PodGang: pg, Quorum: ledger.Quorum{tt.group}}
			if tt.membersAge > 0 {
				g.MembersSince = clk.Now().Add(-tt.membersAge)
			}
			d := w.desired(g)
			if !tt.wantWrite {
				assert.Nil(t, d.condition)
				return
			}
			if assert.NotNil(t, d.condition) {
				assert.Equal(t, tt.wantStatus, d.condition.Status)
				assert.Equal(t, tt.wantReason, d.condition.Reason)
			}
			assert.Equal(t, tt.wantPhase, d.phase)
		})
	}
}
