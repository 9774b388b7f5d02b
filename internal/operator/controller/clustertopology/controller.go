// Package clustertopology keeps the topology objects of the scheduler backends in line with
// each ClusterTopology (a named, admin-owned list of topology levels). For every enabled topology-aware backend:
//   - not listed in spec.schedulerReferences: Grove manages the backend's topology object
//     (named like the ClusterTopology), creating, updating and, through a finalizer, deleting it;
//   - listed there: the referenced object is managed elsewhere and only compared.
//
// The outcome is reported per backend in status.schedulerTopologyStatuses and summarised by
// the SchedulerTopologyDrift condition. The backends' topology objects are watched, so an edit
// of a referenced object shows up as drift without waiting for a resync.
package clustertopology

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// ControllerName names the controller, its logger and its events.
const ControllerName = "clustertopology-controller"

// Reconciler reconciles ClusterTopologies with the backends' topology objects.
type Reconciler struct {
	Client   client.Client
	Registry *backend.Registry
	Recorder events.EventRecorder
	Log      logr.Logger
}

// SetupWithManager registers the controller. It watches ClusterTopologies and, for every
// enabled topology-aware backend whose topology CRD is installed, that backend's objects.
func SetupWithManager(mgr ctrl.Manager, registry *backend.Registry, cfg configv1alpha1.ConcurrencyConfiguration) error {
	r := &Reconciler{
		Client:   mgr.GetClient(),
		Registry: registry,
		Recorder: mgr.GetEventRecorder(ControllerName),
		Log:      mgr.GetLogger().WithName(ControllerName),
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1alpha1.ClusterTopology{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: ptr.Deref(cfg.ConcurrentSyncs, 1)})
	for _, tb := range registry.TopologyAware() {
		gvk, err := mgr.GetRESTMapper().KindFor(tb.TopologyGVR())
		if meta.IsNoMatchError(err) {
			r.Log.Info("not watching the scheduler backend's topology objects: their CRD is not installed",
				"scheduler", tb.Name(), "resource", tb.TopologyGVR().String())
			continue
		}
		if err != nil {
			return fmt.Errorf("resolving the topology resource %s of scheduler backend %s: %w", tb.TopologyGVR(), tb.Name(), err)
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.clusterTopologiesOf(string(tb.Name()))))
	}
	return b.Complete(r)
}

// clusterTopologiesOf maps a backend topology object to the ClusterTopologies it stands for:
// the one of its name that does not reference another object for the backend, and those that
// reference it.
func (r *Reconciler) clusterTopologiesOf(schedulerName string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list corev1alpha1.ClusterTopologyList
		if err := r.Client.List(ctx, &list); err != nil {
			r.Log.Error(err, "listing ClusterTopologies for a scheduler topology object", "object", obj.GetName())
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			ct := &list.Items[i]
			ref, referenced := referenceOf(ct, schedulerName)
			if (referenced && ref == obj.GetName()) || (!referenced && ct.Name == obj.GetName()) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ct)})
			}
		}
		return reqs
	}
}

func referenceOf(ct *corev1alpha1.ClusterTopology, schedulerName string) (string, bool) {
	for _, ref := range ct.Spec.SchedulerReferences {
		if ref.SchedulerName == schedulerName {
			return ref.Reference, true
		}
	}
	return "", false
}

// Reconcile syncs or checks every topology-aware backend's object and reports the outcome.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ct := &corev1alpha1.ClusterTopology{}
	if err := r.Client.Get(ctx, req.NamespacedName, ct); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ct.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, ct)
	}
	if !controllerutil.ContainsFinalizer(ct, common.FinalizerClusterTopology) {
		patch := client.MergeFromWithOptions(ct.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(ct, common.FinalizerClusterTopology)
		if err := r.Client.Patch(ctx, ct, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	results, syncErr := r.syncBackends(ctx, ct)
	if err := r.writeStatus(ctx, ct, results); err != nil {
		return ctrl.Result{}, errors.Join(syncErr, err)
	}
	return ctrl.Result{}, syncErr
}

// outcome classifies one backend's result for the condition.
type outcome int

const (
	inSync outcome = iota
	drifted
	syncFailed
	unavailable
)

type result struct {
	status  corev1alpha1.SchedulerTopologyStatus
	outcome outcome
}

func (r *Reconciler) syncBackends(ctx context.Context, ct *corev1alpha1.ClusterTopology) ([]result, error) {
	var results []result
	var errs []error
	aware := map[string]bool{}
	for _, b := range r.Registry.TopologyAware() {
		name := string(b.Name())
		aware[name] = true
		ref, referenced := referenceOf(ct, name)
		if !referenced {
			if _, referenceOnly := b.(backend.ReferenceOnlyTopologyBackend); referenceOnly {
				continue // nothing to manage and nothing referenced to compare
			}
			ref = ct.Name
			if err := b.SyncTopology(ctx, ct); err != nil {
				errs = append(errs, fmt.Errorf("scheduler %s: %w", name, err))
				results = append(results, result{outcome: syncFailed, status: corev1alpha1.SchedulerTopologyStatus{
					SchedulerName: name, Reference: ref, Message: fmt.Sprintf("syncing the topology object failed: %v", err)}})
				continue
			}
		}
		// Also for the object Grove just wrote: the status reports what is there.
		drift, err := b.CheckTopologyDrift(ctx, ct, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("scheduler %s: %w", name, err))
			results = append(results, result{outcome: syncFailed, status: corev1alpha1.SchedulerTopologyStatus{
				SchedulerName: name, Reference: ref, Message: fmt.Sprintf("reading the topology object failed: %v", err)}})
			continue
		}
		res := result{outcome: inSync, status: corev1alpha1.SchedulerTopologyStatus{
			SchedulerName: name, Reference: ref, InSync: drift.InSync,
			SchedulerBackendTopologyObservedVersion: drift.ObservedGeneration, Message: drift.Message}}
		if !drift.InSync {
			res.outcome = drifted
		}
		results = append(results, res)
	}
	for _, ref := range ct.Spec.SchedulerReferences {
		if aware[ref.SchedulerName] {
			continue
		}
		msg := fmt.Sprintf("scheduler backend %q is not enabled in the operator configuration", ref.SchedulerName)
		if _, enabled := r.Registry.Get(ref.SchedulerName); enabled {
			msg = fmt.Sprintf("scheduler backend %q has no topology object to compare", ref.SchedulerName)
		}
		results = append(results, result{outcome: unavailable, status: corev1alpha1.SchedulerTopologyStatus{
			SchedulerName: ref.SchedulerName, Reference: ref.Reference, Message: msg}})
	}
	sort.Slice(results, func(i, j int) bool { return results[i].status.SchedulerName < results[j].status.SchedulerName })
	return results, errors.Join(errs...)
}

// driftCondition summarises the backends: True when any topology object differs (or could not
// be written or read), else Unknown when a reference names a backend that cannot be checked,
// else False.
func driftCondition(results []result, generation int64) metav1.Condition {
	c := metav1.Condition{Type: common.ConditionSchedulerTopologyDrift, ObservedGeneration: generation}
	messages := func(o outcome) string {
		var m []string
		for _, r := range results {
			if r.outcome == o {
				m = append(m, fmt.Sprintf("%s: %s", r.status.SchedulerName, r.status.Message))
			}
		}
		return strings.Join(m, "; ")
	}
	count := map[outcome]int{}
	for _, r := range results {
		count[r.outcome]++
	}
	switch {
	case count[drifted] > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, common.ReasonSchedulerTopologyDrift, strings.Trim(messages(drifted)+"; "+messages(syncFailed), "; ")
	case count[syncFailed] > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, common.ReasonSchedulerTopologySyncFailed, messages(syncFailed)
	case count[unavailable] > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, common.ReasonSchedulerBackendNotAvailable, messages(unavailable)
	case len(results) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, common.ReasonNoTopologyAwareSchedulers, "no enabled scheduler backend has a topology object for this ClusterTopology"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, common.ReasonSchedulerTopologiesInSync, "the topology objects of all topology-aware scheduler backends match"
	}
	return c
}

// writeStatus patches the status when it changed and records an event when the condition's
// status changes.
func (r *Reconciler) writeStatus(ctx context.Context, ct *corev1alpha1.ClusterTopology, results []result) error {
	updated := ct.DeepCopy()
	updated.Status.ObservedGeneration = ct.Generation
	updated.Status.SchedulerTopologyStatuses = nil
	for _, res := range results {
		updated.Status.SchedulerTopologyStatuses = append(updated.Status.SchedulerTopologyStatuses, res.status)
	}
	cond := driftCondition(results, ct.Generation)
	previous := meta.FindStatusCondition(ct.Status.Conditions, cond.Type)
	meta.SetStatusCondition(&updated.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(ct.Status, updated.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, updated, client.MergeFrom(ct)); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	if previous == nil || previous.Status != cond.Status {
		eventType := corev1.EventTypeWarning
		if cond.Status == metav1.ConditionFalse {
			eventType = corev1.EventTypeNormal
		}
		r.Recorder.Eventf(updated, nil, eventType, cond.Reason, "CheckSchedulerTopologies", "%s", cond.Message)
	}
	return nil
}

// finalize deletes the topology objects Grove manages, then lets the ClusterTopology go.
func (r *Reconciler) finalize(ctx context.Context, ct *corev1alpha1.ClusterTopology) error {
	if !controllerutil.ContainsFinalizer(ct, common.FinalizerClusterTopology) {
		return nil
	}
	for _, b := range r.Registry.TopologyAware() {
		if _, referenced := referenceOf(ct, string(b.Name())); referenced {
			continue
		}
		if _, referenceOnly := b.(backend.ReferenceOnlyTopologyBackend); referenceOnly {
			continue
		}
		if err := b.OnTopologyDelete(ctx, ct); err != nil {
			return fmt.Errorf("deleting the topology object of scheduler %s: %w", b.Name(), err)
		}
	}
	patch := client.MergeFromWithOptions(ct.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ct, common.FinalizerClusterTopology)
	return client.IgnoreNotFound(r.Client.Patch(ctx, ct, patch))
}
