package common

import (
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

// TakeOverPending reports whether a PodCliqueSet's objects still carry another Grove
// operator's hashes (upstream Grove hashes templates differently): its status says it was
// reconciled at its current generation with no update under way, yet not with this operator's
// generation hash. The PodCliqueSet controller then relabels its pods in place (no pod is
// replaced) and writes its status; until it has, nothing else may rewrite the PodCliques'
// template hashes, or the pods would be seen as outdated. pcs has its defaults applied.
func TakeOverPending(stored, pcs *corev1alpha1.PodCliqueSet) bool {
	s := stored.Status
	if s.ObservedGeneration == nil || *s.ObservedGeneration != stored.Generation ||
		(s.UpdateProgress != nil && s.UpdateProgress.UpdateEndedAt == nil) {
		return false
	}
	return s.CurrentGenerationHash == nil || *s.CurrentGenerationHash != hash.PodCliqueSetGeneration(&pcs.Spec.Template)
}
