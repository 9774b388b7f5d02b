package podcliqueset

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/component"
)

// gangWriter keeps a PodCliqueSet's PodGangs (the podGangs component) in a controller of its
// own: its queue, workers and client. As a step of the PodCliqueSet's reconcile they came after
// every PodClique, and at hundreds of replicas that reconcile spent seconds creating PodCliques
// at the client's QPS: no PodGang, so no lifted gate and no scheduled pod, came before it ended.
// What it last did for each PodCliqueSet (the generation, the error, the names foreign objects
// hold) goes into the PodCliqueSet's status, written by the PodCliqueSet controller alone, which
// is woken when that changes.
type gangWriter struct {
	r *Reconciler
	// outcomes: types.NamespacedName -> gangOutcome.
	outcomes sync.Map
	// changed wakes the PodCliqueSet controller (buffered; drained by its channel source).
	changed chan event.GenericEvent
}

// gangOutcome is what the gang writer last did for a PodCliqueSet.
type gangOutcome struct {
	// generation is the PodCliqueSet generation it synced.
	generation int64
	// err is its error (nil when the sync succeeded).
	err error
	// conflicts are the PodGang names held by objects the PodCliqueSet does not own.
	conflicts []string
}

const (
	// gangRetry is when a pass comes back to a PodGang whose condition write conflicted with
	// another writer's, or the gang creator to a gang whose predecessor is still going away.
	gangRetry = 500 * time.Millisecond
	// minGangRequeue is the soonest a pass comes back for a gang whose grace ran out while the
	// pass went on: the next one plans it from a fresh read of the cache.
	minGangRequeue = 50 * time.Millisecond
)

func newGangWriter(r *Reconciler) *gangWriter {
	return &gangWriter{r: r, changed: make(chan event.GenericEvent, 1024)}
}

// setup registers the gang writer and its watches, the ones of the PodCliqueSet controller that
// change a PodGang's plan: the PodCliqueSet's spec and metadata; its PodCliques, scaling groups
// and pods coming and going (and their labels); its PodGangs' deletion and spec changes; and the
// ClusterTopologies its constraints name.
func (w *gangWriter) setup(mgr ctrl.Manager, opts controller.Options) error {
	toPCS := handler.EnqueueRequestsFromMapFunc(podCliqueSetOf)
	membership := builder.WithPredicates(predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, common.DeletionChanged{}))
	return ctrl.NewControllerManagedBy(mgr).
		Named(GangWriterName).
		WithOptions(opts).
		For(&corev1alpha1.PodCliqueSet{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, updateStartedOrEnded))).
		Watches(&corev1alpha1.PodClique{}, toPCS, membership).
		Watches(&corev1alpha1.PodCliqueScalingGroup{}, toPCS, membership).
		Watches(&corev1.Pod{}, toPCS, builder.WithPredicates(predicate.Or[client.Object](
			predicate.LabelChangedPredicate{}, common.DeletionChanged{}, podPhaseEnded{}))).
		// Not their labels and annotations: its own metadata patches would each bring the writer
		// back to a cache that does not show the others yet, and it would patch those again.
		Owns(&schedv1alpha1.PodGang{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, common.DeletionChanged{}))).
		Watches(&corev1alpha1.ClusterTopology{}, handler.EnqueueRequestsFromMapFunc(w.r.podCliqueSetsOfTopology)).
		Complete(w)
}

// Reconcile syncs the PodGangs of a PodCliqueSet that is not being deleted (a deleted one's
// PodGangs go in the PodCliqueSet controller's deletion order).
func (w *gangWriter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w.r.initWrites(nil)
	if !w.r.gangWrites.CaughtUp(ctx, &corev1alpha1.PodCliqueSet{}, req.NamespacedName) {
		return common.Requeue(), nil
	}
	stored := &corev1alpha1.PodCliqueSet{}
	if err := w.r.Client.Get(ctx, req.NamespacedName, stored); err != nil {
		if client.IgnoreNotFound(err) == nil {
			w.outcomes.Delete(req.NamespacedName)
			w.r.gangWrites.Forget(stored, req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = w.r.gangWrites.For(ctx, stored)
	if common.IsTerminating(stored) {
		return reconcile.Result{}, nil
	}
	st := w.r.newState(stored)
	err := w.r.resolveTopology(ctx, st)
	if err == nil {
		err = (&podGangs{w.r}).Sync(ctx, st)
	}
	if err != nil {
		err = &component.Error{Component: (&podGangs{}).Name(), Err: err}
	}
	w.record(ctx, stored, err, st.podGangConflicts)
	grovemetrics.ObserveReconcileError(GangWriterName, err)
	return reconcile.Result{RequeueAfter: st.requeue}, err
}

// record keeps the outcome and wakes the PodCliqueSet controller when it changed.
func (w *gangWriter) record(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, err error, conflicts []string) {
	now := gangOutcome{generation: pcs.Generation, err: err, conflicts: slices.Sorted(slices.Values(conflicts))}
	key := client.ObjectKeyFromObject(pcs)
	if before, ok := w.outcomes.Swap(key, now); ok && before.(gangOutcome).equal(now) {
		return
	}
	select {
	case w.changed <- event.GenericEvent{Object: pcs}:
	case <-ctx.Done():
	}
}

func (o gangOutcome) equal(other gangOutcome) bool {
	return o.generation == other.generation && errText(o.err) == errText(other.err) && slices.Equal(o.conflicts, other.conflicts)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// errGangsPending: the gang writer has not synced the PodCliqueSet's generation yet.
var errGangsPending = errors.New("the PodGangs of this generation are not written yet")

// outcome is what the PodCliqueSet's status reports of the gang writer's last sync: its
// conflicts go into st, and the error is its sync error, errGangsPending when it has not synced
// this generation yet, or nil.
func (w *gangWriter) outcome(key types.NamespacedName, st *state) error {
	v, ok := w.outcomes.Load(key)
	if !ok {
		return errGangsPending
	}
	o := v.(gangOutcome)
	st.podGangConflicts = o.conflicts
	if o.generation != st.stored.Generation {
		return errGangsPending
	}
	return o.err
}
