package grove

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestGroveBackend(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: ""}}
	New().PreparePod(pod, backend.PodGangRef{Name: "p-0", PodGroup: "p-0-a"})
	assert.Equal(t, "grove-scheduler", pod.Spec.SchedulerName)

	pcs := &corev1alpha1.PodCliqueSet{}
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack"}
	warnings, errs := New().ValidatePodCliqueSet(context.Background(), pcs)
	assert.Empty(t, warnings)
	assert.Empty(t, errs, "grove-scheduler honours topology constraints")
}
