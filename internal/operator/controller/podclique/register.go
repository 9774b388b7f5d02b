package podclique

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// ControllerName names the controller (and its events).
const ControllerName = "podclique"

// GateControllerName names the PodClique controller's scheduling-gate remover (its client's
// user agent).
const GateControllerName = "podclique-gates"

// StatusWriterName names the PodClique controller's status writer (its client's user agent).
const StatusWriterName = "podclique-status"

// SetupWithManager registers the controller and its watches:
//   - PodCliques: spec (generation), labels (PodGang, template hash) and deletion;
//   - their pods: every change, and the informer's sightings settle the expectations;
//   - owned ResourceClaims: deletion (a wanted claim is made again, a stale one is gone);
//   - ServiceAccounts (metadata, creation): cliques whose pods the apiserver refused retry;
//   - PodCliqueSets: when a rolling update moves to another replica, its standalone
//     PodCliques replace their outdated pods.
//
// It also starts the clique's status writer and its gate lifter (gates.go), which has the same
// concurrency.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.initWrites(mgr.GetCache())
	r.status = newStatusWriter(r)
	if err := mgr.Add(r.status); err != nil {
		return err
	}
	if err := r.setupGateLifter(mgr, opts); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts).
		For(&corev1alpha1.PodClique{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, common.DeletionChanged{}))).
		Watches(&corev1.Pod{}, r.podEvents()).
		Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(resourceclaim.Deleted())).
		Watches(&corev1alpha1.PodCliqueSet{}, handler.EnqueueRequestsFromMapFunc(r.standaloneCliques),
			builder.WithPredicates(common.ReplicaBeingUpdatedChanged{})).
		// Metadata only, and a watch of its own: the ServiceAccounts pods name are not Grove's.
		WatchesMetadata(&corev1.ServiceAccount{}, handler.EnqueueRequestsFromMapFunc(r.cliquesWaitingForPods),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return true },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Complete(r)
}

// standaloneCliques maps a PodCliqueSet to its standalone PodCliques: a rolling update moved on
// to another replica.
func (r *Reconciler) standaloneCliques(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &corev1alpha1.PodCliqueList{}
	if err := common.ListManaged(ctx, r.Client, list, obj.GetNamespace(),
		common.ComponentLabels(obj.GetName(), apicommon.ComponentPCSPodClique), apicommon.LabelPartOfKey); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing PodCliques", "podCliqueSet", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// podEvents enqueues a pod's PodClique and tells the expectations what the cache saw.
func (r *Reconciler) podEvents() handler.EventHandler {
	owner := podCliqueOf
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if req, ok := owner(e.Object); ok {
				r.Expectations.Observed(req.String(), e.Object.GetUID(), false)
				q.Add(req)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			if req, ok := owner(e.ObjectNew); ok {
				q.Add(req)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if req, ok := owner(e.Object); ok {
				r.Expectations.Observed(req.String(), e.Object.GetUID(), true)
				q.Add(req)
			}
		},
	}
}
