package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// The back-off doubles from initialBackOff with each replacement and stops at maxBackOff.
func TestNodeFailureBackOff(t *testing.T) {
	cfg := configv1alpha1.NodeFailureConfiguration{InitialBackOff: metav1.Duration{Duration: 10 * time.Second}, MaxBackOff: metav1.Duration{Duration: 5 * time.Minute}}
	var got []time.Duration
	for n := int32(1); n <= 8; n++ {
		got = append(got, backOff(cfg, n))
	}
	assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second,
		5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, got)
	assert.Equal(t, 5*time.Minute, backOff(cfg, 1<<20), "a large count neither overflows nor loops long")
}
