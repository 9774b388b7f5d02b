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

func TestClassify(t *testing.T) {
	for msg, want := range map[string]string{
		"needs 6 pods within one rack; the best rack fits 4":                                        ReasonNoDomain,
		"pod x of PodGroup \"w\" fits no node (first node: node is outside the gang's rack \"r1\")": ReasonNoDomain,
		"pod x fits no node (3 nodes are reserved for PodGang ns/y, which waits longer)":            ReasonReservedForOther,
		"needs 8 devices of class gpu; the best domain offers 4":                                    ReasonDRA,
		"pod x of PodGroup \"w\" fits no node (first node: Insufficient cpu)":                       ReasonNoRoom,
	} {
		assert.Equal(t, want, Classify(msg), msg)
	}
}
