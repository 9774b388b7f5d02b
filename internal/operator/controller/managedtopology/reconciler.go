// Package managedtopology keeps the ClusterTopologies that grove-operator manages from its
// configuration (topologyAwareScheduling.profiles) equal to that configuration: created at
// start-up, restored when edited, recreated when deleted.
package managedtopology

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// ControllerName names the controller.
const ControllerName = "managed-clustertopology"

// Reconciler reconciles the ClusterTopologies of the configured topology profiles.
type Reconciler struct {
	Client   client.Client
	Profiles []configv1alpha1.TopologyProfile
}

func (r *Reconciler) profile(name string) (configv1alpha1.TopologyProfile, bool) {
	for _, p := range r.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return configv1alpha1.TopologyProfile{}, false
}

// Reconcile creates or restores the ClusterTopology of one profile.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p, ok := r.profile(req.Name)
	if !ok {
		return reconcile.Result{}, nil
	}
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}
	_, err := common.CreateOrPatchConfigured(ctx, r.Client, ct, func() error {
		if common.IsTerminating(ct) {
			return nil // recreated once it is gone
		}
		ct.Labels = common.WithLabels(ct.Labels, map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue})
		if !equality.Semantic.DeepEqual(ct.Spec.Levels, p.Levels) {
			ct.Spec.Levels = append([]corev1alpha1.TopologyLevel(nil), p.Levels...)
		}
		if !equality.Semantic.DeepEqual(ct.Spec.SchedulerReferences, p.SchedulerReferences) {
			ct.Spec.SchedulerReferences = append([]corev1alpha1.SchedulerReference(nil), p.SchedulerReferences...)
		}
		return nil
	})
	return reconcile.Result{}, err
}

// SetupWithManager watches the managed ClusterTopologies and enqueues every profile at start.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	managed := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		_, ok := r.profile(obj.GetName())
		return ok
	})
	atStart := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		for _, p := range r.Profiles {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: p.Name}})
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(opts).
		For(&corev1alpha1.ClusterTopology{}, builder.WithPredicates(managed)).
		WatchesRawSource(atStart).
		Complete(r)
}
