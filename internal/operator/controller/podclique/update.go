package podclique

import (
	"context"
	"errors"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
)

// replaceOutdatedPods moves a standalone PodClique to its current template during a
// RollingRecreate update of its PodCliqueSet replica: outdated pods that are not ready are
// replaced at once (they serve nothing), then the ready ones one at a time, each only once
// every pod of the clique is ready again, so the clique loses at most one ready pod at a time
// and stays at minAvailable unless all its pods are its minimum. Members of scaling groups are
// replaced a whole group replica at a time by their scaling group instead.
func (r *Reconciler) replaceOutdatedPods(ctx context.Context, key string, pclq *corev1alpha1.PodClique, active []*corev1.Pod) error {
	if _, member := pclq.Labels[apicommon.LabelPodCliqueScalingGroup]; member {
		return nil
	}
	templateHash := pclq.Labels[apicommon.LabelPodTemplateHash]
	var outdatedReady, outdatedNotReady []*corev1.Pod
	allReady := true
	for _, p := range active {
		ready := common.IsReady(p)
		allReady = allReady && ready
		switch {
		case p.Labels[apicommon.LabelPodTemplateHash] == templateHash:
		case ready:
			outdatedReady = append(outdatedReady, p)
		default:
			outdatedNotReady = append(outdatedNotReady, p)
		}
	}
	if len(outdatedReady)+len(outdatedNotReady) == 0 {
		return nil
	}
	if ok, err := r.rollingUpdateOf(ctx, pclq); err != nil || !ok {
		return err
	}
	if len(outdatedNotReady) > 0 {
		return r.deleteForUpdate(ctx, key, pclq, outdatedNotReady)
	}
	if !allReady {
		return nil // a replacement is still starting
	}
	// Never a healthy member before its replacement can be created: a replacement the
	// apiserver refuses would leave the clique a pod short for good.
	if err := r.replacementCreatable(ctx, pclq); err != nil {
		return err
	}
	// Highest pod index first, as a scale-in would.
	sort.Slice(outdatedReady, func(i, j int) bool {
		a, _ := common.IntLabel(outdatedReady[i], apicommon.LabelPodCliquePodIndex)
		b, _ := common.IntLabel(outdatedReady[j], apicommon.LabelPodCliquePodIndex)
		return a > b
	})
	return r.deleteForUpdate(ctx, key, pclq, outdatedReady[:1])
}

// rollingUpdateOf reports whether the PodCliqueSet is rolling out an update to this PodClique's
// replica (RollingRecreate, and the replica is the one being updated).
func (r *Reconciler) rollingUpdateOf(ctx context.Context, pclq *corev1alpha1.PodClique) (bool, error) {
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: common.PodCliqueSetName(pclq)}, pcs); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	replica, ok := common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex)
	updating, isRolling := common.ReplicaBeingUpdated(pcs)
	return ok && isRolling && updating == replica, nil
}

func (r *Reconciler) deleteForUpdate(ctx context.Context, key string, pclq *corev1alpha1.PodClique, pods []*corev1.Pod) error {
	for _, p := range pods {
		r.Expectations.ExpectDeletion(key, p.UID)
		if err := common.Delete(ctx, r.Client, p); err != nil {
			r.Expectations.CancelDeletion(key, p.UID)
			return err
		}
		grovemetrics.PodsDeleted.WithLabelValues(grovemetrics.DeleteUpdate).Inc()
		r.Recorder.Eventf(pclq, p, corev1.EventTypeNormal, "UpdatePod", "DeletePod",
			"deleted pod %s (template %s) to recreate it from template %s", p.Name, p.Labels[apicommon.LabelPodTemplateHash], pclq.Labels[apicommon.LabelPodTemplateHash])
	}
	return nil
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
