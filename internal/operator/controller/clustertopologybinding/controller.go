// Package clustertopologybinding serves upstream Grove's ClusterTopologyBinding through this
// project's ClusterTopology: for every binding it keeps a ClusterTopology of the same name equal
// to it (levels; schedulerTopologyBindings become schedulerReferences), owned by the binding so
// that deleting the binding removes it, and writes the ClusterTopology's status back onto the
// binding with upstream's field names. Everything that reads topologies (admission, the
// PodCliqueSet controller, the backends, the drift controller) reads only ClusterTopologies, so
// a PodCliqueSet naming a binding behaves exactly as one naming a ClusterTopology.
package clustertopologybinding

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/core/validation"
)

// ControllerName names the controller.
const ControllerName = "clustertopologybinding-controller"

// Reconciler translates ClusterTopologyBindings into ClusterTopologies.
type Reconciler struct {
	Client client.Client
	// TopologyAware names the enabled topology-aware scheduler backends: bindings of other
	// schedulers are ignored (and named in the Translated condition).
	TopologyAware []string
}

// SetupWithManager registers the controller; it also watches the ClusterTopologies the bindings
// own, so their status reaches the binding.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts).
		For(&corev1alpha1.ClusterTopologyBinding{}).
		Owns(&corev1alpha1.ClusterTopology{}).
		Complete(r)
}

// Reconcile makes the ClusterTopology of the binding's name equal to the binding and reports.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &corev1alpha1.ClusterTopologyBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the owned ClusterTopology
	}
	// A binding its ClusterTopology's admission would refuse (one admitted before bindings were
	// validated, or while the webhook was off) is reported, not retried forever: its next
	// change brings it back.
	warnings, errs := validation.ValidateClusterTopologyBinding(b, r.TopologyAware)
	if len(errs) > 0 {
		return ctrl.Result{}, r.writeStatus(ctx, b, nil, metav1.Condition{
			Type: common.ConditionTranslated, Status: metav1.ConditionFalse, Reason: common.ReasonClusterTopologyBindingInvalid,
			Message: "the binding is not translated: " + errs.ToAggregate().Error()})
	}
	ignored := ""
	if len(warnings) > 0 {
		ignored = "; " + strings.Join(warnings, "; ")
	}
	ct := &corev1alpha1.ClusterTopology{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: b.Name}, ct)
	switch {
	case apierrors.IsNotFound(err):
		ct = &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: b.Name}}
		r.translateInto(b, ct)
		if err := controllerutil.SetControllerReference(b, ct, r.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, ct); err != nil {
			if refused(err) {
				return ctrl.Result{}, r.writeStatus(ctx, b, nil, metav1.Condition{
					Type: common.ConditionTranslated, Status: metav1.ConditionFalse, Reason: common.ReasonClusterTopologyBindingInvalid,
					Message: fmt.Sprintf("ClusterTopology %s is refused: %v", b.Name, err)})
			}
			return ctrl.Result{}, fmt.Errorf("creating ClusterTopology %s: %w", b.Name, err)
		}
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(ct, b):
		// An admin's ClusterTopology (or one managed from the operator configuration) of the
		// same name wins; the binding is reported as having no effect.
		return ctrl.Result{}, r.writeStatus(ctx, b, nil, metav1.Condition{
			Type: common.ConditionTranslated, Status: metav1.ConditionFalse, Reason: common.ReasonClusterTopologyNameTaken,
			Message: fmt.Sprintf("ClusterTopology %s exists and is not owned by this binding; it is left as it is", b.Name)})
	case !ct.DeletionTimestamp.IsZero():
		return ctrl.Result{}, nil // recreated once it is gone (its deletion is watched)
	default:
		patch := client.MergeFromWithOptions(ct.DeepCopy(), client.MergeFromWithOptimisticLock{})
		r.translateInto(b, ct)
		if err := r.Client.Patch(ctx, ct, patch); err != nil {
			if refused(err) {
				return ctrl.Result{}, r.writeStatus(ctx, b, nil, metav1.Condition{
					Type: common.ConditionTranslated, Status: metav1.ConditionFalse, Reason: common.ReasonClusterTopologyBindingInvalid,
					Message: fmt.Sprintf("ClusterTopology %s refuses the change: %v", b.Name, err)})
			}
			return ctrl.Result{}, fmt.Errorf("updating ClusterTopology %s: %w", b.Name, err)
		}
	}
	return ctrl.Result{}, r.writeStatus(ctx, b, ct, metav1.Condition{
		Type: common.ConditionTranslated, Status: metav1.ConditionTrue, Reason: common.ReasonClusterTopologyTranslated,
		Message: fmt.Sprintf("ClusterTopology %s is kept equal to this binding", b.Name) + ignored})
}

// refused reports an error the apiserver (or admission) will give again for the same object.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

func (r *Reconciler) translateInto(b *corev1alpha1.ClusterTopologyBinding, ct *corev1alpha1.ClusterTopology) {
	if ct.Annotations == nil {
		ct.Annotations = map[string]string{}
	}
	ct.Annotations[common.AnnotationClusterTopologyBinding] = b.Name
	want, _, _ := b.ClusterTopologySpecFor(r.TopologyAware)
	if !equality.Semantic.DeepEqual(ct.Spec, want) {
		ct.Spec = want
	}
}

// writeStatus reports the translation and, once the ClusterTopology's status is about the
// current translation, its drift condition and per-backend statuses in upstream's shape.
func (r *Reconciler) writeStatus(ctx context.Context, b *corev1alpha1.ClusterTopologyBinding, ct *corev1alpha1.ClusterTopology, translated metav1.Condition) error {
	updated := b.DeepCopy()
	translated.ObservedGeneration = b.Generation
	meta.SetStatusCondition(&updated.Status.Conditions, translated)
	if ct != nil {
		updated.Status.ObservedGeneration = b.Generation
	}
	if ct != nil && ct.Status.ObservedGeneration == ct.Generation && ct.Generation != 0 {
		updated.Status.SchedulerTopologyStatuses = nil
		for _, s := range ct.Status.SchedulerTopologyStatuses {
			updated.Status.SchedulerTopologyStatuses = append(updated.Status.SchedulerTopologyStatuses, corev1alpha1.SchedulerTopologyBindingStatus{
				SchedulerName: s.SchedulerName, TopologyReference: s.Reference, InSync: s.InSync,
				SchedulerBackendTopologyObservedGeneration: s.SchedulerBackendTopologyObservedVersion, Message: s.Message})
		}
		for _, c := range ct.Status.Conditions {
			c.ObservedGeneration = b.Generation
			meta.SetStatusCondition(&updated.Status.Conditions, c)
		}
	} else if ct == nil {
		meta.RemoveStatusCondition(&updated.Status.Conditions, common.ConditionSchedulerTopologyDrift)
		updated.Status.SchedulerTopologyStatuses = nil
	}
	if equality.Semantic.DeepEqual(b.Status, updated.Status) {
		return nil
	}
	return r.Client.Status().Patch(ctx, updated, client.MergeFrom(b))
}
