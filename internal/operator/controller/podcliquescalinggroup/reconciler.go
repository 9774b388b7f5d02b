// Package podcliquescalinggroup is the PodCliqueScalingGroup controller: it keeps one
// PodClique per member clique and group replica, and reports which replicas are scheduled and
// available. The group's replicas belong to its scale subresource once it exists.
package podcliquescalinggroup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/expectations"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// Reconciler reconciles PodCliqueScalingGroups.
type Reconciler struct {
	Client client.Client
	// Recorder reports member names held by PodCliques Grove did not create; optional.
	Recorder events.EventRecorder
	// Claims keeps the ResourceClaims of the scaling group's resourceSharing entries.
	Claims *resourceclaim.Syncer

	// writes is the controller's record of its writes (common.Writes): a reconcile starts only
	// once the cache shows the last ones it made for its group.
	writes    *common.Writes
	writesSet sync.Once
	// expectedDeletions are the member pods an update deleted, until the cache shows them gone.
	expectedDeletions     *expectations.Store
	expectedDeletionsOnce sync.Once
}

// deletions is the store of pod deletions the cache does not show yet.
func (r *Reconciler) deletions() *expectations.Store {
	r.expectedDeletionsOnce.Do(func() { r.expectedDeletions = expectations.New(expectations.DefaultTTL) })
	return r.expectedDeletions
}

// initWrites makes the record of writes and routes the client's writes through it; informers
// is the manager's cache (nil in a unit test on a fake client).
func (r *Reconciler) initWrites(informers cache.Informers) {
	r.writesSet.Do(func() {
		if r.writes == nil { // a record a test set is kept
			r.writes = common.NewWrites(r.Client.Scheme(), informers, r.Client,
				&corev1alpha1.PodCliqueScalingGroup{}, &corev1alpha1.PodClique{})
		}
		r.Client = r.writes.Client(r.Client)
	})
}

// Reconcile makes a scaling group's PodCliques match its replicas and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.initWrites(nil)
	if !r.writes.CaughtUp(ctx, &corev1alpha1.PodCliqueScalingGroup{}, req.NamespacedName) {
		return common.Requeue(), nil
	}
	pcsg := &corev1alpha1.PodCliqueScalingGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcsg); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.Forget(pcsg, req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = r.writes.For(ctx, pcsg)
	members, err := r.listMembers(ctx, pcsg)
	if err != nil {
		return reconcile.Result{}, err
	}
	if common.IsTerminating(pcsg) {
		var errs []error
		for _, m := range members {
			errs = append(errs, common.Delete(ctx, r.Client, m))
		}
		if err := errors.Join(errs...); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, common.RemoveFinalizer(ctx, r.Client, pcsg, apicommon.FinalizerPodCliqueScalingGroup)
	}
	if err := common.EnsureFinalizer(ctx, r.Client, pcsg, apicommon.FinalizerPodCliqueScalingGroup); err != nil {
		return reconcile.Result{}, err
	}
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcsg.Namespace, Name: common.PodCliqueSetName(pcsg)}, pcs); err != nil {
		// An orphan is garbage collected; nothing to build it from.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := pcs
	pcs = pcs.DeepCopy()
	corev1alpha1.SetDefaultsPodCliqueSet(pcs)
	if common.TakeOverPending(stored, pcs) {
		// The PodCliqueSet controller relabels the members' pods first (its status is not
		// watched here, hence the requeue).
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	hashes := hash.NewTemplates(&pcs.Spec.Template)
	pods := &groupPods{reader: r.Client, pcsg: pcsg}
	// The group's claims exist before its members' pods reference them.
	syncErr := r.Claims.SyncScalingGroup(ctx, pcs, pcsg)
	// The update decides first which group replicas keep their members' template for now (a
	// replica's members are written only at its turn); a pass that could not replace anything
	// (a refused dry run, a conflicting progress write) still creates and removes members.
	var conflicts bool
	var t turn
	if syncErr == nil {
		var updateErr error
		t, updateErr = r.replaceOutdatedReplicas(ctx, pcs, pcsg, members, pods, hashes)
		if t.decided {
			conflicts, syncErr = r.syncMembers(ctx, pcs, pcsg, members, pods, hashes, t)
		}
		syncErr = errors.Join(syncErr, updateErr)
	}
	if syncErr == nil && len(t.due) > 0 {
		syncErr = r.deleteWhenWritten(ctx, pcsg, pods, t.due)
	}
	recheck, statusErr := r.updateStatus(ctx, pcs, pcsg, members, pods, hashes, syncErr == nil)
	res := reconcile.Result{RequeueAfter: recheck}
	if conflicts {
		// The other PodClique's deletion sends no event this controller sees.
		res.RequeueAfter = min(cmp.Or(res.RequeueAfter, common.NameConflictRecheck), common.NameConflictRecheck)
	}
	return res, errors.Join(syncErr, statusErr)
}

// groupPods are the group's pods, listed once per reconcile on first use, from the informer
// without copying: a large group's reconcile spent most of its time copying the same pods for
// each reader. They must not be modified. Not safe for concurrent use.
type groupPods struct {
	reader client.Reader
	pcsg   *corev1alpha1.PodCliqueScalingGroup
	items  []corev1.Pod
	listed bool
}

func (g *groupPods) list(ctx context.Context) ([]corev1.Pod, error) {
	if g.listed {
		return g.items, nil
	}
	list := &corev1.PodList{}
	if err := common.ListManaged(ctx, g.reader, list, g.pcsg.Namespace, map[string]string{
		apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: common.PodCliqueSetName(g.pcsg),
		apicommon.LabelPodCliqueScalingGroup: g.pcsg.Name,
	}, apicommon.LabelPodCliqueScalingGroup, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	g.items, g.listed = list.Items, true
	return g.items, nil
}

// changed marks the pods as changed by this reconcile: the next reader lists them again.
func (g *groupPods) changed() { g.listed = false }

// listMembers lists the group's PodCliques from the cache.
func (r *Reconciler) listMembers(ctx context.Context, pcsg *corev1alpha1.PodCliqueScalingGroup) ([]*corev1alpha1.PodClique, error) {
	list := &corev1alpha1.PodCliqueList{}
	if err := common.ListManaged(ctx, r.Client, list, pcsg.Namespace, map[string]string{
		apicommon.LabelPartOfKey: common.PodCliqueSetName(pcsg), apicommon.LabelPodCliqueScalingGroup: pcsg.Name,
	}, apicommon.LabelPodCliqueScalingGroup); err != nil {
		return nil, err
	}
	var out []*corev1alpha1.PodClique
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], pcsg) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// syncMembers deletes the PodCliques of replicas at or above spec.replicas (and of cliques no
// longer in the group) and creates or updates the others, except the existing members of the
// replicas the update holds, which keep the template their pods run until their turn.
// It reports whether a member's name is held by a PodClique Grove did not create.
func (r *Reconciler) syncMembers(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup, members []*corev1alpha1.PodClique,
	pods *groupPods, hashes *hash.Templates, update turn) (bool, error) {
	pcsReplica, ok := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	if !ok {
		return false, reconcile.TerminalError(fmt.Errorf("PodCliqueScalingGroup %s has no valid %s label", pcsg.Name, apicommon.LabelPodCliqueSetReplicaIndex))
	}
	minAvailable := int(ptrOr(pcsg.Spec.MinAvailable, 1))
	var targets []common.PodCliqueTarget
	for j := range int(pcsg.Spec.Replicas) {
		for _, name := range pcsg.Spec.CliqueNames {
			clique := pcs.Spec.Template.Clique(name)
			if clique == nil {
				continue
			}
			targets = append(targets, common.PodCliqueTarget{PCS: pcs, Replica: pcsReplica, Clique: clique, Hashes: hashes,
				Member: &common.ScalingGroupMember{Name: pcsg.Name, Replica: j, MinAvailable: minAvailable}})
		}
	}
	want := make(map[string]bool, len(targets))
	for _, t := range targets {
		want[t.Name()] = true
	}
	var unwanted []*corev1alpha1.PodClique
	existing := make(map[string]bool, len(members))
	for _, m := range members {
		existing[m.Name] = true
		if !want[m.Name] {
			unwanted = append(unwanted, m)
		}
	}
	targets = slices.DeleteFunc(targets, func(t common.PodCliqueTarget) bool {
		return update.held[t.Member.Replica] && existing[t.Name()]
	})
	unwanted, err := r.scaleInWithinBudget(ctx, pcs, pcsg, members, unwanted, pods, hashes)
	if err != nil {
		return false, err
	}
	// In slow-start batches, as the PodCliqueSet controller creates its own PodCliques: a
	// group's members are independent of each other.
	_, delErr := common.SlowStart(ctx, len(unwanted), func(ctx context.Context, i int) error {
		return common.Delete(ctx, r.Client, unwanted[i])
	})
	var conflicts atomic.Bool
	_, err = common.SlowStart(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: t.Name(), Namespace: pcsg.Namespace}}
		own := common.Child{Owner: pcsg, PodCliqueSet: pcs.Name, Component: apicommon.ComponentPCSGPodClique,
			Field: "spec.template.podCliqueScalingGroups[].cliqueNames[]: " + t.Clique.Name}
		_, err := common.CreateOrPatch(ctx, r.Client, own, pclq, func() error {
			common.MutatePodClique(pclq, t)
			return nil
		})
		if nc, ok := common.AsNameConflict(err); ok {
			// The PodCliqueSet reports it too (its condition); the group says which of its members.
			r.warn(pcsg, corev1.EventTypeWarning, apicommon.ReasonChildNameConflict, "CreatePodClique", "%s", nc.Error())
			conflicts.Store(true)
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("PodClique %s: %w", t.Name(), err)
		}
		return nil
	})
	return conflicts.Load(), errors.Join(delErr, err)
}

func (r *Reconciler) warn(pcsg *corev1alpha1.PodCliqueScalingGroup, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(pcsg, nil, eventType, reason, action, format, args...)
	}
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// scaleInWithinBudget limits a scale-in that overlaps an update of the group's PodCliqueSet
// replica to the group's rollingUpdate.maxUnavailable, which the update draws on too: whole
// replicas are removed, highest index first, only as far as the budget left by unavailable
// replicas and replicas still being removed allows. Replicas an update's turn takes down in the
// same pass need no share of their own: the update's budget already left room for every
// replica a scale-in removes (budget). Outside an update, or for members of cliques no longer in
// the group, nothing is held back.
func (r *Reconciler) scaleInWithinBudget(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup,
	members, unwanted []*corev1alpha1.PodClique, pods *groupPods, hashes *hash.Templates) ([]*corev1alpha1.PodClique, error) {
	pcsReplica, _ := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	progress := pcsg.Status.UpdateProgress
	if len(unwanted) == 0 || progress == nil || progress.UpdateEndedAt != nil || !common.IsReplicaBeingUpdated(pcs, pcsReplica) {
		return unwanted, nil
	}
	replicas, _, err := r.groupReplicas(ctx, pods, members, hashes)
	if err != nil {
		return nil, err
	}
	removing := map[int]bool{}
	var waiting []int
	for _, m := range unwanted {
		j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		if !ok || j < int(pcsg.Spec.Replicas) {
			continue
		}
		if common.IsTerminating(m) {
			removing[j] = true
		} else if !slices.Contains(waiting, j) {
			waiting = append(waiting, j)
		}
	}
	budget := int(corev1alpha1.ResolveMaxUnavailable(rollingUpdateOfGroup(pcs, pcsg), pcsg.Spec.Replicas)) - unavailable(replicas) - len(removing)
	sort.Sort(sort.Reverse(sort.IntSlice(waiting)))
	allowed := map[int]bool{}
	for _, j := range waiting {
		if !removing[j] && len(allowed) < budget {
			allowed[j] = true
		}
	}
	return slices.DeleteFunc(unwanted, func(m *corev1alpha1.PodClique) bool {
		j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		return ok && j >= int(pcsg.Spec.Replicas) && !allowed[j] && !removing[j]
	}), nil
}
