package podcliqueset

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ai-dynamo/grove/internal/operator/packing"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// ControllerName names the controller (and its events).
const ControllerName = "podcliqueset"

// GangWriterName names the PodCliqueSet controller's PodGang writer (its client's user agent).
const GangWriterName = "podcliqueset-podgangs"

// GangCreatorName names the gang writer's fast path for complete new PodGangs (gangcreator.go);
// it writes through the gang writer's client.
const GangCreatorName = "podcliqueset-podgang-creates"

// StatusWriterName names the client of the PodCliqueSet controller's status writes (its user
// agent).
const StatusWriterName = "podcliqueset-status"

// IndexTopologyName indexes PodCliqueSets by the ClusterTopology their constraints refer to.
const IndexTopologyName = "grove.io/topologyName"

// IndexPriorityClassName indexes PodCliqueSets by the PriorityClasses their pods name.
const IndexPriorityClassName = "grove.io/priorityClassName"

// SetupWithManager registers the controller and its watches:
//   - PodCliqueSets: spec (generation), labels and annotations (its PodGangs mirror them) and
//     deletion;
//   - PodCliques and PodCliqueScalingGroups of the PodCliqueSet (members of scaling groups
//     included): existence, spec (scale subresources) and status;
//   - pods of the PodCliqueSet: existence, labels and deletion (PodGang membership);
//   - owned PodGangs: deletion, spec drift and status (status.podGangStatuses);
//   - owned HorizontalPodAutoscalers, Services, ServiceAccounts, Roles, RoleBindings:
//     deletion and spec drift;
//   - owned ResourceClaims: deletion;
//   - ClusterTopologies: the PodCliqueSets whose constraints name them;
//   - Nodes: a change of Ready or of the unreachable taint, and deletion, for the
//     PodCliqueSets with pods on them (nodefailure.go);
//   - PriorityClasses: creation and deletion, for the PodCliqueSets whose pods name them;
//   - the gang writer (gangwriter.go), which it starts: when its outcome for a PodCliqueSet
//     changes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1alpha1.PodCliqueSet{}, IndexTopologyName, func(obj client.Object) []string {
		pcs, ok := obj.(*corev1alpha1.PodCliqueSet)
		if !ok || !packing.HasConstraints(&pcs.Spec.Template) {
			return nil
		}
		if name := packing.NameOf(&pcs.Spec.Template); name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1alpha1.PodCliqueSet{}, IndexPriorityClassName, func(obj client.Object) []string {
		if pcs, ok := obj.(*corev1alpha1.PodCliqueSet); ok {
			return priorityClassNames(pcs)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, IndexPodNodeName, func(obj client.Object) []string {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return err
	}
	toPCS := handler.EnqueueRequestsFromMapFunc(podCliqueSetOf)
	driftOrDeletion := builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, common.DeletionChanged{}))
	deletion := builder.WithPredicates(predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false }, UpdateFunc: func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
	r.gangs = newGangWriter(r)
	r.initWrites(mgr.GetCache())
	if err := r.gangs.setup(mgr, opts); err != nil {
		return err
	}
	if err := (&gangCreator{r: r}).setup(mgr, opts); err != nil {
		return err
	}
	r.gangCreator = true
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts).
		For(&corev1alpha1.PodCliqueSet{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, common.DeletionChanged{}))).
		Watches(&corev1alpha1.PodClique{}, toPCS, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, common.DeletionChanged{},
			common.StatusChanged[*corev1alpha1.PodClique]{Status: func(p *corev1alpha1.PodClique) any { return p.Status }}))).
		Watches(&corev1alpha1.PodCliqueScalingGroup{}, toPCS, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, common.DeletionChanged{},
			common.StatusChanged[*corev1alpha1.PodCliqueScalingGroup]{Status: func(p *corev1alpha1.PodCliqueScalingGroup) any { return p.Status }}))).
		Watches(&corev1.Pod{}, toPCS, builder.WithPredicates(predicate.Or[client.Object](
			predicate.LabelChangedPredicate{}, common.DeletionChanged{}, podPhaseEnded{}))).
		// PodGang status feeds the Ready condition and status.podGangStatuses.
		Owns(&schedv1alpha1.PodGang{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, common.DeletionChanged{}, podGangStatusChanged))).
		Owns(&corev1.Service{}, deletion).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}, driftOrDeletion).
		Owns(&corev1.ServiceAccount{}, deletion).
		Owns(&rbacv1.Role{}, deletion).
		Owns(&rbacv1.RoleBinding{}, deletion).
		Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(resourceclaim.Deleted())).
		Watches(&corev1alpha1.ClusterTopology{}, handler.EnqueueRequestsFromMapFunc(r.podCliqueSetsOfTopology)).
		// A node's failure (Ready, the unreachable taint, its deletion) for the pods bound to it.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.podCliqueSetsOnNode), builder.WithPredicates(nodeHealthChanged)).
		Watches(&schedulingv1.PriorityClass{}, handler.EnqueueRequestsFromMapFunc(r.podCliqueSetsOfPriorityClass),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		// The gang writer's outcome changed (status.podGangStatuses, conflicts, observedGeneration).
		WatchesRawSource(source.Channel(r.gangs.changed, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// podCliqueSetOf maps an object to the PodCliqueSet it is part of.
func podCliqueSetOf(_ context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[apicommon.LabelManagedByKey] != apicommon.LabelManagedByValue {
		return nil
	}
	name := common.PodCliqueSetName(obj)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// podCliqueSetsOfTopology maps a ClusterTopology to the PodCliqueSets that refer to it.
func (r *Reconciler) podCliqueSetsOfTopology(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &corev1alpha1.PodCliqueSetList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{IndexTopologyName: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing PodCliqueSets of a ClusterTopology", "clusterTopology", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// podPhaseEnded passes pod updates into Succeeded or Failed (they leave their PodGang).
type podPhaseEnded struct{ predicate.Funcs }

func (podPhaseEnded) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Pod)
	n, ok2 := e.ObjectNew.(*corev1.Pod)
	return ok1 && ok2 && o.Status.Phase != n.Status.Phase &&
		(n.Status.Phase == corev1.PodSucceeded || n.Status.Phase == corev1.PodFailed)
}

// podGangStatusChanged passes PodGang updates that change its phase or conditions.
var podGangStatusChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*schedv1alpha1.PodGang)
		n, ok2 := e.ObjectNew.(*schedv1alpha1.PodGang)
		return ok1 && ok2 && (o.Status.Phase != n.Status.Phase || !equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
