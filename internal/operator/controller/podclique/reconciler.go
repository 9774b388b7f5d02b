// Package podclique is the PodClique controller: it keeps a PodClique's pods (gated until
// their PodGang lists them), removes the gates in gang order and reports the clique's status.
package podclique

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/expectations"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// Reconciler reconciles PodCliques.
type Reconciler struct {
	Client client.Client
	// GateClient lifts the scheduling gates (Client when nil). A client of its own keeps the
	// gate PATCHes from queueing behind the pod creations on one client-side rate limiter:
	// pods whose gang is listed start scheduling while the rest are still being created.
	GateClient client.Client
	// StatusClient writes the PodClique's status (Client when nil): a clique's status changes
	// several times while its pods are created, gated, placed and started, and those writes
	// must not queue on the rate limiter of the client that creates the pods.
	StatusClient client.Client
	Registry     *backend.Registry
	Expectations *expectations.Store
	Recorder     events.EventRecorder
	// Claims keeps the ResourceClaims of the clique's own resourceSharing entries.
	Claims *resourceclaim.Syncer
	// StartupWaiterImage runs `grove-operator wait-for-cliques` in pods with parent PodCliques.
	StartupWaiterImage string

	// status writes the status off the reconcile path (SetupWithManager starts it); nil in
	// a Reconciler driven by hand, which writes it inline.
	status *statusWriter

	// writes, gateWrites and statusWrites record the writes of the controller, its gate lifter
	// and its status writer (common.Writes): each starts on a clique only once the cache shows
	// the last writes it made for it. Pod counts also have the expectations, as in
	// kube-controller-manager's ReplicaSet controller.
	writes, gateWrites, statusWrites *common.Writes
	writesSet                        sync.Once
}

// initWrites makes the records of writes and routes each client's writes through its own;
// informers is the manager's cache (nil when the Reconciler is driven by hand).
func (r *Reconciler) initWrites(informers cache.Informers) {
	r.writesSet.Do(func() {
		scheme, base := r.Client.Scheme(), r.Client
		// A record a test set is kept.
		if r.writes == nil {
			r.writes = common.NewWrites(scheme, informers, base, &corev1alpha1.PodClique{}, &corev1.Pod{})
		}
		if r.gateWrites == nil {
			r.gateWrites = common.NewWrites(scheme, informers, base, &corev1.Pod{})
		}
		if r.statusWrites == nil {
			r.statusWrites = common.NewWrites(scheme, informers, base, &corev1alpha1.PodClique{})
		}
		r.Client = r.writes.Client(base)
		r.GateClient = r.gateWrites.Client(cmp.Or(r.GateClient, base))
		r.StatusClient = r.statusWrites.Client(cmp.Or(r.StatusClient, base))
	})
}

// Reconcile makes a PodClique's pods match its spec and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.initWrites(nil)
	if !r.writes.CaughtUp(ctx, &corev1alpha1.PodClique{}, req.NamespacedName) {
		return common.Requeue(), nil
	}
	pclq := &corev1alpha1.PodClique{}
	if err := r.Client.Get(ctx, req.NamespacedName, pclq); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.Forget(pclq, req.NamespacedName)
			r.Expectations.Forget(req.String())
			if r.status != nil {
				r.status.forget(req.NamespacedName)
			}
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	ctx = r.writes.For(ctx, pclq)
	pods, err := r.listPods(ctx, pclq)
	if err != nil {
		return reconcile.Result{}, err
	}
	if common.IsTerminating(pclq) {
		return reconcile.Result{}, r.reconcileDelete(ctx, pclq, pods)
	}
	if err := common.EnsureFinalizer(ctx, r.Client, pclq, apicommon.FinalizerPodClique); err != nil {
		return reconcile.Result{}, err
	}
	syncErr := r.syncPods(ctx, req.String(), pclq, pods)
	var res reconcile.Result
	if errors.Is(syncErr, errCoherentWait) {
		// Pod deletions of the replica's other PodCliques send this one no event.
		syncErr, res.RequeueAfter = nil, coherentWaitRetry
	}
	claimsErr := r.syncClaims(ctx, req.String(), pclq, pods)
	// Pods the apiserver refuses are reported (PodCreateFailed), not waited for silently: the
	// spec has been acted on, so observedGeneration advances all the same.
	outcome, reported := outcomeOf(syncErr)
	statusErr := r.updateStatus(ctx, pclq, pods, reported && claimsErr == nil, outcome, reported)
	grovemetrics.ObserveReconcileError("podclique", errors.Join(syncErr, claimsErr, statusErr))
	return res, errors.Join(syncErr, claimsErr, statusErr)
}

// listPods lists the PodClique's pods from the cache.
func (r *Reconciler) listPods(ctx context.Context, pclq *corev1alpha1.PodClique) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := common.ListManaged(ctx, r.Client, list, pclq.Namespace,
		common.PodCliqueSelector(common.PodCliqueSetName(pclq), pclq.Name), apicommon.LabelPodClique); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], pclq) {
			pods = append(pods, &list.Items[i])
		}
	}
	return pods, nil
}

// reconcileDelete deletes the pods of a PodClique that is going away, then lets it go.
func (r *Reconciler) reconcileDelete(ctx context.Context, pclq *corev1alpha1.PodClique, pods []*corev1.Pod) error {
	_, err := common.SlowStart(ctx, len(pods), func(ctx context.Context, i int) error {
		p := pods[i]
		err := common.Delete(ctx, r.Client, p)
		if err == nil && !common.IsTerminating(p) {
			grovemetrics.PodsDeleted.WithLabelValues(grovemetrics.DeleteCliqueDeleted).Inc()
		}
		return err
	})
	if err != nil {
		return err
	}
	r.Expectations.Forget(client.ObjectKeyFromObject(pclq).String())
	return common.RemoveFinalizer(ctx, r.Client, pclq, apicommon.FinalizerPodClique)
}

// syncPods creates or deletes pods until spec.replicas are live, counting pods the cache does
// not show yet through the expectations. Their gates are the gate lifter's (gates.go).
func (r *Reconciler) syncPods(ctx context.Context, key string, pclq *corev1alpha1.PodClique, pods []*corev1.Pod) error {
	live := make(map[types.UID]bool, len(pods))
	var active []*corev1.Pod
	for _, p := range pods {
		live[p.UID] = common.IsActive(p)
		if common.IsActive(p) {
			active = append(active, p)
		}
	}
	pending := r.Expectations.Pending(key, live)
	diff := int(pclq.Spec.Replicas) - (len(active) + len(pending.Creations) - len(pending.Deletions))
	switch {
	case diff > 0:
		if err := r.createPods(ctx, key, pclq, pods, pending, diff); err != nil {
			return err
		}
	case diff < 0:
		candidates := slices.DeleteFunc(slices.Clone(active), func(p *corev1.Pod) bool { return pending.Deletions[p.UID] })
		if err := r.deletePods(ctx, key, pclq, candidates, -diff); err != nil {
			return err
		}
	case len(pending.Creations) == 0 && len(pending.Deletions) == 0:
		// Pods are only replaced for an update once the clique has all its pods and nothing of
		// an earlier step is in flight.
		return r.replaceOutdatedPods(ctx, key, pclq, active)
	}
	return nil
}

func (r *Reconciler) createPods(ctx context.Context, key string, pclq *corev1alpha1.PodClique, pods []*corev1.Pod, pending expectations.Pending, n int) error {
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: common.PodCliqueSetName(pclq)}, pcs); err != nil {
		// Without its PodCliqueSet the clique is an orphan about to be garbage collected.
		return client.IgnoreNotFound(err)
	}
	place, err := placementOf(pclq, pcs)
	if err != nil {
		return reconcile.TerminalError(fmt.Errorf("PodClique %s: %w", pclq.Name, err))
	}
	b, ok := r.Registry.Get(pclq.Spec.PodSpec.SchedulerName)
	if !ok {
		msg := fmt.Sprintf("scheduler %q is not an enabled scheduler profile; no pods are created", pclq.Spec.PodSpec.SchedulerName)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, "SchedulerNotEnabled", "CreatePods", msg)
		return reconcile.TerminalError(errors.New(msg))
	}
	if wait, err := r.coherentReplicaServesOldPods(ctx, pcs, pclq); err != nil || wait {
		if wait {
			return errCoherentWait
		}
		return err
	}
	// Only active pods hold their index: a replacement takes the index (and so the hostname)
	// of the pod it replaces while that one is still terminating, as upstream does. Dynamo
	// derives ranks from the index and addresses peers by hostname, so a rollout must not
	// shift them.
	used := map[int]bool{}
	for _, p := range pods {
		if i, ok := common.IntLabel(p, apicommon.LabelPodCliquePodIndex); ok && common.IsActive(p) {
			used[i] = true
		}
	}
	for _, c := range pending.Creations {
		used[c.Index] = true
	}
	waiter, waiterVolume, waiterSA, err := r.startupWaiter(ctx, pcs, pclq)
	if err != nil {
		return err
	}
	indices := lowestFreeIndices(used, n)
	claims, err := r.podClaims(ctx, pcs, pclq, indices)
	if err != nil {
		return fmt.Errorf("PodClique %s: resource claims: %w", pclq.Name, err)
	}
	created, err := common.SlowStart(ctx, n, func(ctx context.Context, i int) error {
		pod := buildPod(pclq, place, indices[i], b)
		resourceclaim.Inject(&pod.Spec, claims.ForPod(indices[i]))
		withStartupWaiter(pod, waiter, waiterVolume, waiterSA)
		if err := r.Client.Create(ctx, pod); err != nil {
			return refusal(err)
		}
		grovemetrics.PodsCreated.Inc()
		r.Expectations.ExpectCreation(key, pod.UID, indices[i])
		return nil
	})
	if err != nil {
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, "PodCreateFailed", "CreatePods", "created %d of %d pods: %v", created, n, err)
		return err
	}
	return nil
}

func (r *Reconciler) deletePods(ctx context.Context, key string, pclq *corev1alpha1.PodClique, candidates []*corev1.Pod, n int) error {
	sortForDeletion(candidates, pclq.Labels[apicommon.LabelPodTemplateHash])
	victims := candidates[:min(n, len(candidates))]
	_, err := common.SlowStart(ctx, len(victims), func(ctx context.Context, i int) error {
		p := victims[i]
		r.Expectations.ExpectDeletion(key, p.UID)
		if err := common.Delete(ctx, r.Client, p); err != nil {
			r.Expectations.CancelDeletion(key, p.UID)
			return err
		}
		grovemetrics.PodsDeleted.WithLabelValues(grovemetrics.DeleteScaleIn).Inc()
		return nil
	})
	return err
}

func (r *Reconciler) statusClient() client.Client {
	return cmp.Or(r.StatusClient, r.Client) // the manager's client when no writer has its own
}
