package podclique

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
)

// replaceOutdatedPods moves a standalone PodClique to its current template during an update
// of its PodCliqueSet replica. Outdated pods that are not ready are replaced at once (they
// serve nothing, and a stuck pod must not block the update that may fix it). Ready ones go
// within the clique's rollingUpdate.maxUnavailable: at most that many of its desired pods are
// unavailable at a time, pods still starting included, highest index first, as a scale-in
// would. Under Coherent the PodCliqueSet controller replaces the replica's pods instead.
// Members of scaling groups are replaced a whole group replica at a time by their scaling group.
func (r *Reconciler) replaceOutdatedPods(ctx context.Context, key string, pclq *corev1alpha1.PodClique, active []*corev1.Pod) error {
	if _, member := pclq.Labels[apicommon.LabelPodCliqueScalingGroup]; member {
		return nil
	}
	templateHash := pclq.Labels[apicommon.LabelPodTemplateHash]
	var outdatedReady, outdatedNotReady []*corev1.Pod
	var ready int32
	accepted := false // a live pod of the current template: the apiserver creates them
	for _, p := range active {
		isReady := common.IsReady(p)
		if isReady {
			ready++
		}
		switch {
		case p.Labels[apicommon.LabelPodTemplateHash] == templateHash:
			accepted = true
		case isReady:
			outdatedReady = append(outdatedReady, p)
		default:
			outdatedNotReady = append(outdatedNotReady, p)
		}
	}
	if len(outdatedReady)+len(outdatedNotReady) == 0 {
		return nil
	}
	pcs, ok, err := r.rollingUpdateOf(ctx, pclq)
	if err != nil || !ok {
		return err
	}
	if corev1alpha1.StrategyOf(pcs) == corev1alpha1.CoherentStrategy {
		return nil // the PodCliqueSet controller replaces the whole replica's pods in one pass
	}
	if len(outdatedNotReady) > 0 {
		return r.deleteForUpdate(ctx, key, pclq, outdatedNotReady)
	}
	budget := int(corev1alpha1.ResolveMaxUnavailable(rollingUpdateOfClique(pcs, pclq), pclq.Spec.Replicas)) - int(max(0, pclq.Spec.Replicas-ready))
	if budget <= 0 || len(outdatedReady) == 0 {
		return nil // replacements are still starting: the budget is spent
	}
	// Never a healthy member before its replacement can be created: a replacement the
	// apiserver refuses would leave the clique a pod short for good. Once it has created one,
	// the dry run is not repeated at every pod the update replaces.
	if !accepted {
		if err := r.replacementCreatable(ctx, pclq); err != nil {
			return err
		}
	}
	sort.Slice(outdatedReady, func(i, j int) bool {
		a, _ := common.IntLabel(outdatedReady[i], apicommon.LabelPodCliquePodIndex)
		b, _ := common.IntLabel(outdatedReady[j], apicommon.LabelPodCliquePodIndex)
		return a > b
	})
	return r.deleteForUpdate(ctx, key, pclq, outdatedReady[:min(budget, len(outdatedReady))])
}

// rollingUpdateOfClique is the rollingUpdate of the standalone clique template pclq was built from.
func rollingUpdateOfClique(pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) *corev1alpha1.RollingUpdateConfiguration {
	replica, _ := common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex)
	for _, c := range pcs.Spec.Template.StandaloneCliques() {
		if apicommon.StandalonePodCliqueName(pcs.Name, replica, c.Name) == pclq.Name {
			return c.RollingUpdate
		}
	}
	return nil
}

// rollingUpdateOf reports whether the PodCliqueSet is rolling out an update to this PodClique's
// replica (RollingRecreate or Coherent, and the replica is one being updated).
func (r *Reconciler) rollingUpdateOf(ctx context.Context, pclq *corev1alpha1.PodClique) (*corev1alpha1.PodCliqueSet, bool, error) {
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: common.PodCliqueSetName(pclq)}, pcs); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	replica, ok := common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex)
	return pcs, ok && common.IsReplicaBeingUpdated(pcs, replica), nil
}

// deleteForUpdate deletes the pods in slow-start batches: the budget chose them together, and
// one after another each waited for the others' round trips.
func (r *Reconciler) deleteForUpdate(ctx context.Context, key string, pclq *corev1alpha1.PodClique, pods []*corev1.Pod) error {
	_, err := common.SlowStart(ctx, len(pods), func(ctx context.Context, i int) error {
		p := pods[i]
		r.Expectations.ExpectDeletion(key, p.UID)
		if err := common.Delete(ctx, r.Client, p); err != nil {
			r.Expectations.CancelDeletion(key, p.UID)
			return err
		}
		grovemetrics.PodsDeleted.WithLabelValues(grovemetrics.DeleteUpdate).Inc()
		r.Recorder.Eventf(pclq, p, corev1.EventTypeNormal, "UpdatePod", "DeletePod",
			"deleted pod %s (template %s) to recreate it from template %s", p.Name, p.Labels[apicommon.LabelPodTemplateHash], pclq.Labels[apicommon.LabelPodTemplateHash])
		return nil
	})
	return err
}

// replacementCreatable dry-runs a pod of the clique's current template; a refusal keeps the
// outdated pods (reported as PodCreateFailed) until the cause is fixed.
func (r *Reconciler) replacementCreatable(ctx context.Context, pclq *corev1alpha1.PodClique) error {
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: common.PodCliqueSetName(pclq)}, pcs); err != nil {
		return err
	}
	if err := CanCreatePod(ctx, r.Client, r.Registry, pcs, pclq); err != nil {
		err = refusal(err)
		var refused errPodCreateRefused
		if errors.As(err, &refused) {
			r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, "PodCreateFailed", "UpdatePods",
				"the apiserver refuses pods of the updated template; no outdated pod is deleted until it would create them: %v", err)
		}
		return err
	}
	return nil
}

// errCoherentWait: pod creation waits for the replica's old pods to go (Coherent).
var errCoherentWait = errors.New("the replica still has pods of the old template")

// coherentWaitRetry is how soon a PodClique waiting on its replica's old pods looks again.
const coherentWaitRetry = 200 * time.Millisecond

// coherentReplicaServesOldPods tells whether the PodClique's replica is under a Coherent update
// and still has an active pod of an outdated template in any of its PodCliques. No pod of the
// new version is created until then: the PodCliqueSet controller deletes the old pods of every
// role in one pass, but the deletions are separate requests, and a replacement created (and
// ready) between them would serve next to old pods of another role.
func (r *Reconciler) coherentReplicaServesOldPods(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) (bool, error) {
	replica, ok := common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex)
	if !ok || corev1alpha1.StrategyOf(pcs) != corev1alpha1.CoherentStrategy || !common.IsReplicaBeingUpdated(pcs, replica) {
		return false, nil
	}
	selector := client.MatchingLabels{apicommon.LabelPartOfKey: pcs.Name, apicommon.LabelPodCliqueSetReplicaIndex: strconv.Itoa(replica)}
	pclqs := &corev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, pclqs, client.InNamespace(pclq.Namespace), selector); err != nil {
		return false, err
	}
	want := map[string]string{}
	for i := range pclqs.Items {
		want[pclqs.Items[i].Name] = pclqs.Items[i].Labels[apicommon.LabelPodTemplateHash]
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pclq.Namespace), selector); err != nil {
		return false, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if h, known := want[p.Labels[apicommon.LabelPodClique]]; known && common.IsActive(p) && p.Labels[apicommon.LabelPodTemplateHash] != h {
			return true, nil
		}
	}
	return false, nil
}
