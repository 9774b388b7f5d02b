package podclique

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// statusWriter writes PodClique status off the reconcile path. A clique's status changes
// several times while its pods are created, ungated, placed and started; written inline, each
// change held a reconcile worker on the status client's rate limiter, and at hundreds of
// cliques the workers that create pods and lift gates all waited there. The reconcile only
// records what it synced and queues the clique; the writer's workers compute the status from
// the cache when they get to it, so changes that pile up while a clique waits in the queue
// become one write. A write waits statusWindow after the first change of a burst, so the pod
// events of a burst (creations, gate removals, bindings, readiness: four per pod) become one
// write, not one each; the window is short because the scaling-group and PodCliqueSet
// controllers act on these counts (rolling updates, gang termination), and a batching delay of
// a second made them act on counts a second old.
type statusWriter struct {
	r       *Reconciler
	workers int
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// synced holds, per clique, the last generation whose sync succeeded: observedGeneration
	// advances only to it.
	synced sync.Map // types.NamespacedName -> int64
	// outcomes holds, per clique, what its last pod creations came to (PodCreateFailed).
	outcomes sync.Map // types.NamespacedName -> createOutcome
}

// statusWorkers is how many status writes may be under way at once.
const statusWorkers = 4

func newStatusWriter(r *Reconciler) *statusWriter {
	return &statusWriter{r: r, workers: statusWorkers,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: StatusWriterName})}
}

// enqueue asks for the clique's status to be written; synced reports whether this reconcile's
// sync of generation succeeded.
func (w *statusWriter) enqueue(key types.NamespacedName, generation int64, synced bool) {
	if synced {
		w.synced.Store(key, generation)
	}
	w.queue.AddAfter(key, statusWindow) // a key already waiting keeps its earlier time
}

// statusWindow is how long a clique's status write waits for more changes of the same burst.
const statusWindow = 100 * time.Millisecond

// forget drops what is kept of a clique that is gone.
func (w *statusWriter) forget(key types.NamespacedName) {
	w.synced.Delete(key)
	w.outcomes.Delete(key)
}

// syncedGeneration is the last generation of the clique whose sync succeeded.
func (w *statusWriter) syncedGeneration(key types.NamespacedName) (int64, bool) {
	v, ok := w.synced.Load(key)
	if !ok {
		return 0, false
	}
	return v.(int64), true
}

// Start runs the workers until ctx ends (a manager runnable: only the leader writes).
func (w *statusWriter) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.workers {
		wg.Go(func() {
			for w.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

func (w *statusWriter) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.write(ctx, key); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "writing PodClique status", "podClique", key)
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// write computes the clique's status from the cache and writes it when it changed. It waits
// until the cache shows its last status write of the clique (the Reconciler's statusWrites):
// the conditions' transition times are computed from the observed status.
func (w *statusWriter) write(ctx context.Context, key types.NamespacedName) error {
	if !w.r.statusWrites.CaughtUp(ctx, &corev1alpha1.PodClique{}, key) {
		w.queue.AddAfter(key, common.CacheCatchUpRetry)
		return nil
	}
	pclq := &corev1alpha1.PodClique{}
	if err := w.r.Client.Get(ctx, key, pclq); err != nil {
		if apierrors.IsNotFound(err) {
			w.forget(key)
			w.r.statusWrites.Forget(pclq, key)
			return nil
		}
		return err
	}
	ctx = w.r.statusWrites.For(ctx, pclq)
	pods, err := w.r.listPods(ctx, pclq)
	if err != nil {
		return err
	}
	observed := pclq.Status.ObservedGeneration
	if gen, ok := w.syncedGeneration(key); ok && (observed == nil || gen > *observed) {
		observed = &gen
	}
	var outcome *createOutcome
	if v, ok := w.outcomes.Load(key); ok {
		o := v.(createOutcome)
		outcome = &o
	}
	recheck, err := w.r.writeStatus(ctx, pclq, pods, observed, outcome)
	if recheck > 0 {
		// The progressDeadline runs out with no event to bring the clique back.
		w.queue.AddAfter(key, recheck)
	}
	return err
}
