package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// A gang a required replica spread keeps waiting says so as data: its own Scheduled reason,
// which IsUnschedulable (and so every reader of the condition) recognises.
func TestSpreadCauseHasItsOwnReason(t *testing.T) {
	reason := unschedulableReason(ledger.WaitSpread)
	assert.Equal(t, common.ReasonReplicaSpreadUnsatisfiable, reason)
	assert.True(t, common.IsUnschedulable(reason))
}
