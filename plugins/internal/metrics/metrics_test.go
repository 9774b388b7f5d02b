package metrics

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/component-base/metrics/testutil"
)

// A gang moves between reasons and leaves the gauge when placed or gone; the gauge counts
// gangs, not updates.
func TestWaitingGaugeFollowsEachGang(t *testing.T) {
	Register()
	value := func(reason string) float64 {
		v, err := testutil.GetGaugeMetricValue(gangsWaiting.WithLabelValues(reason))
		assert.NoError(t, err)
		return v
	}
	SetWaiting("ns/a", ReasonQuorumMissing)
	SetWaiting("ns/a", ReasonQuorumMissing)
	SetWaiting("ns/b", ReasonQuorumMissing)
	assert.Equal(t, 2.0, value(ReasonQuorumMissing))
	SetWaiting("ns/a", ReasonNoDomain)
	assert.Equal(t, 1.0, value(ReasonQuorumMissing))
	assert.Equal(t, 1.0, value(ReasonNoDomain))
	SetWaiting("ns/a", "")
	SetWaiting("ns/b", "")
	SetWaiting("ns/c", "")
	assert.Equal(t, 0.0, value(ReasonQuorumMissing))
	assert.Equal(t, 0.0, value(ReasonNoDomain))
}
