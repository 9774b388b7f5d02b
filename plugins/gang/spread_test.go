package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// A gang a required replica spread keeps waiting says so as data: its own Scheduled reason,
// which IsUnschedulable (and so every reader of the condition) recognises.
func TestSpreadCauseHasItsOwnReason(t *testing.T) {
	reason := unschedulableReason(ledger.WaitSpread)
	assert.Equal(t, common.ReasonReplicaSpreadUnsatisfiable, reason)
	assert.True(t, common.IsUnschedulable(reason))
}

// A gang a required slicing keeps waiting says so as data too; the placement's cause is the
// ledger's.
func TestSliceCauseHasItsOwnReason(t *testing.T) {
	assert.Equal(t, ledger.WaitSlice, placement.CauseSlice)
	reason := unschedulableReason(ledger.WaitSlice)
	assert.Equal(t, common.ReasonSliceUnsatisfiable, reason)
	assert.True(t, common.IsUnschedulable(reason))
}
