package podcliquescalinggroup

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// ControllerName names the controller (and its events).
const ControllerName = "podcliquescalinggroup"

// SetupWithManager registers the controller and its watches:
//   - PodCliqueScalingGroups: spec (replicas via /scale) and deletion;
//   - their PodCliques: creation, deletion, spec drift and status (replica availability);
//   - owned ResourceClaims: deletion (a wanted claim is made again);
//   - PodCliqueSets: a template change reaches the members; a rolling update reaching the
//     group's replica starts replacing its outdated replicas.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.initWrites(mgr.GetCache())
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts).
		// Annotations: the PodCliqueSet controller asks for GangTerminationInProgress through one.
		For(&corev1alpha1.PodCliqueScalingGroup{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, common.DeletionChanged{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1alpha1.PodClique{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, common.DeletionChanged{},
			common.StatusChanged[*corev1alpha1.PodClique]{Status: func(p *corev1alpha1.PodClique) any { return p.Status }}))).
		Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(resourceclaim.Deleted())).
		Watches(&corev1alpha1.PodCliqueSet{}, handler.EnqueueRequestsFromMapFunc(r.scalingGroupsOf),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, common.ReplicaBeingUpdatedChanged{}))).
		Complete(r)
}

// scalingGroupsOf maps a PodCliqueSet to its scaling groups.
func (r *Reconciler) scalingGroupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &corev1alpha1.PodCliqueScalingGroupList{}
	if err := common.ListManaged(ctx, r.Client, list, obj.GetNamespace(),
		common.ComponentLabels(obj.GetName(), apicommon.ComponentPodCliqueScalingGroup), apicommon.LabelPartOfKey); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing PodCliqueScalingGroups", "podCliqueSet", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
