package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// A gang a required role group keeps waiting says so as data: the domain choice's cause is the
// ledger's, and it maps to its own Scheduled reason, which IsUnschedulable recognises.
func TestRoleAffinityCauseHasItsOwnReason(t *testing.T) {
	assert.Equal(t, ledger.WaitRoleAffinity, placement.CauseRoleAffinity)
	reason := unschedulableReason(placement.CauseRoleAffinity)
	assert.Equal(t, common.ReasonRoleAffinityUnsatisfiable, reason)
	assert.True(t, common.IsUnschedulable(reason))
}
