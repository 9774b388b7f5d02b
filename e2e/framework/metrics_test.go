package framework

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetricValue(t *testing.T) {
	const text = `# HELP scheduler_goroutines [ALPHA] Number of running goroutines split by the work they do such as binding.
# TYPE scheduler_goroutines gauge
scheduler_goroutines{operation="Filter"} 0
scheduler_goroutines{operation="binding"} 30
scheduler_goroutines_other{operation="binding"} 7
scheduler_pending_pods{queue="active"} 2
scheduler_up 1
`
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"scheduler_goroutines", map[string]string{"operation": "binding"}, 30},
		{"scheduler_goroutines", map[string]string{"operation": "Filter"}, 0},
		{"scheduler_goroutines", map[string]string{"operation": "Permit"}, 0},
		{"scheduler_pending_pods", nil, 2},
		{"scheduler_up", nil, 1},
		{"scheduler_missing", nil, 0},
	} {
		got, err := metricValue(strings.NewReader(text), tc.name, tc.labels)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s %v", tc.name, tc.labels)
	}
}
