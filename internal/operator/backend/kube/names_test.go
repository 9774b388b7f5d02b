package kube

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNames(t *testing.T) {
	assert.Equal(t, "disagg-0-workers-0-disagg-0-workers-1-prefill", PodGroupName("disagg-0-workers-0", "disagg-0-workers-1-prefill"))
	assert.Equal(t, "disagg-0", CompositePodGroupName("disagg-0"))
	assert.Equal(t, "disagg-0-disagg-0-workers-0", GroupConfigCompositePodGroupName("disagg-0", "disagg-0-workers-0"))
	long := PodGroupName(strings.Repeat("g", 200), strings.Repeat("c", 100))
	assert.LessOrEqual(t, len(long), 253)
	assert.NotEqual(t, long, PodGroupName(strings.Repeat("g", 200), strings.Repeat("c", 99)+"d"), "long names of different groups stay distinct")
}
