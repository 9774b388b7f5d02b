package common

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

func TestTakeOverPending(t *testing.T) {
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: corev1alpha1.PodCliqueSetSpec{
		Template: corev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "a"}}}}}
	ours := hash.PodCliqueSetGeneration(&pcs.Spec.Template)
	now := metav1.Now()
	cases := []struct {
		name   string
		status corev1alpha1.PodCliqueSetStatus
		want   bool
	}{
		{name: "never reconciled", status: corev1alpha1.PodCliqueSetStatus{}},
		{name: "reconciled by this operator", status: corev1alpha1.PodCliqueSetStatus{ObservedGeneration: ptr.To[int64](3), CurrentGenerationHash: &ours}},
		{name: "spec changed since the last reconcile", status: corev1alpha1.PodCliqueSetStatus{ObservedGeneration: ptr.To[int64](2), CurrentGenerationHash: ptr.To("other")}},
		{name: "another operator's hash mid-update", status: corev1alpha1.PodCliqueSetStatus{ObservedGeneration: ptr.To[int64](3), CurrentGenerationHash: ptr.To("other"),
			UpdateProgress: &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now}}},
		{name: "another operator's hash, settled", want: true, status: corev1alpha1.PodCliqueSetStatus{ObservedGeneration: ptr.To[int64](3), CurrentGenerationHash: ptr.To("other"),
			UpdateProgress: &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now, UpdateEndedAt: &now}}},
		{name: "an operator that writes no generation hash", want: true, status: corev1alpha1.PodCliqueSetStatus{ObservedGeneration: ptr.To[int64](3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stored := pcs.DeepCopy()
			stored.Status = tc.status
			assert.Equal(t, tc.want, TakeOverPending(stored, pcs))
		})
	}
}
