package koordinator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPodGroupNameFitsALabelValue(t *testing.T) {
	assert.Equal(t, "disagg-0-disagg-0-router", PodGroupName("disagg-0", "disagg-0-router"))
	gang := "disaggregated-inference-0-workers-3"
	prefill := PodGroupName(gang, gang+"-prefill")
	decode := PodGroupName(gang, gang+"-decode")
	assert.LessOrEqual(t, len(prefill), 63)
	assert.True(t, strings.HasPrefix(prefill, "disaggregated-inference-0-w"), prefill)
	assert.NotEqual(t, prefill, decode, "long names of different groups stay distinct")
}
