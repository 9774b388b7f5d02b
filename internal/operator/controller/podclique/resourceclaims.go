package podclique

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// Hierarchical resource sharing (DRA): the PodClique owns the claims of its clique's own
// resourceSharing entries, one per pod index for PerReplica; its pods reference those and the
// claims of the PodCliqueSet and scaling-group entries that reach the clique.

// podClaims makes the clique's own claims exist for the pods about to be created with indices
// and returns the claims the clique's pods use.
func (r *Reconciler) podClaims(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique, indices []int) (resourceclaim.PodClaims, error) {
	if !resourceclaim.Declared(&pcs.Spec.Template) {
		return resourceclaim.PodClaims{}, nil
	}
	claims, err := resourceclaim.ForPodClique(pcs, pclq)
	if err != nil {
		return claims, err
	}
	if !claims.HasCliqueLevel() {
		return claims, nil
	}
	w, err := resourceclaim.Locate(pcs, pclq)
	if err != nil {
		return claims, err
	}
	return claims, r.Claims.EnsurePodClique(ctx, pcs, pclq, w.Clique, indices)
}

// syncClaims keeps the clique's own claims for the pods it has (a deleted claim comes back)
// and removes the per-pod claims of indices no pod has any more (scale-in).
func (r *Reconciler) syncClaims(ctx context.Context, key string, pclq *corev1alpha1.PodClique, pods []*corev1.Pod) error {
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: common.PodCliqueSetName(pclq)}, pcs); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !resourceclaim.Declared(&pcs.Spec.Template) {
		return nil
	}
	w, err := resourceclaim.Locate(pcs, pclq)
	if err != nil || len(w.Clique.ResourceSharing) == 0 {
		return err
	}
	keep := map[int]bool{}
	live := make(map[types.UID]bool, len(pods))
	var active []int
	for _, p := range pods {
		live[p.UID] = common.IsActive(p)
		if i, ok := common.IntLabel(p, apicommon.LabelPodCliquePodIndex); ok {
			keep[i] = true
			if common.IsActive(p) {
				active = append(active, i)
			}
		}
	}
	for _, c := range r.Expectations.Pending(key, live).Creations {
		keep[c.Index] = true
	}
	if err := r.Claims.EnsurePodClique(ctx, pcs, pclq, w.Clique, active); err != nil {
		return err
	}
	return r.Claims.CleanupPodClique(ctx, pclq, func(i int) bool { return keep[i] })
}
