package podclique

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// updateStatus has the PodClique's status written when it changed: by the status writer when
// the controller runs one, else here. observedGeneration advances only when the sync
// succeeded: a generation whose pods could not be made is not observed.
// outcome is what pod creation came to, when known.
func (r *Reconciler) updateStatus(ctx context.Context, pclq *corev1alpha1.PodClique, pods []*corev1.Pod, synced bool, outcome createOutcome, known bool) error {
	if r.status != nil {
		if known {
			r.status.outcomes.Store(client.ObjectKeyFromObject(pclq), outcome)
		}
		r.status.enqueue(client.ObjectKeyFromObject(pclq), pclq.Generation, synced)
		return nil
	}
	observed := pclq.Status.ObservedGeneration
	if synced {
		observed = ptr.To(pclq.Generation)
	}
	var o *createOutcome
	if known {
		o = &outcome
	}
	_, err := r.writeStatus(ctx, pclq, pods, observed, o)
	return err
}

// writeStatus applies the PodClique's status (the whole of it, as computed; common.ApplyStatus), with observedGeneration observed and the
// PodCreateFailed condition of outcome (unchanged when nil), when it changed. recheck is when
// a standalone clique's UpdateInProgress progressDeadline runs out (0: never).
func (r *Reconciler) writeStatus(ctx context.Context, pclq *corev1alpha1.PodClique, pods []*corev1.Pod, observed *int64, outcome *createOutcome) (recheck time.Duration, err error) {
	status := computeStatus(pclq, pods)
	status.ObservedGeneration = observed
	if outcome != nil {
		setPodCreateFailedCondition(&status.Conditions, *outcome, pclq.Generation)
	}
	rollout, standalone, err := r.rollout(ctx, pclq, pods)
	if err != nil {
		return 0, err
	}
	if standalone {
		var cond metav1.Condition
		cond, recheck = common.UpdateInProgressCondition(rollout, time.Now())
		common.SetCondition(&status.Conditions, cond, pclq.Generation)
	}
	if equality.Semantic.DeepEqual(status, pclq.Status) {
		return recheck, nil
	}
	pclq.Status = status
	if err := common.ApplyStatus(ctx, r.statusClient(), pclq, apicommon.PodCliqueFieldManager); err != nil {
		return recheck, client.IgnoreNotFound(err)
	}
	return recheck, nil
}

// rollout reads a standalone clique's part in an update of its PodCliqueSet replica (upstream
// Grove reports UpdateInProgress per standalone PodClique and scaling group; a scaling group's
// members are the group's). standalone is false for a member, or a clique whose PodCliqueSet
// is gone.
func (r *Reconciler) rollout(ctx context.Context, pclq *corev1alpha1.PodClique, pods []*corev1.Pod) (common.ComponentRollout, bool, error) {
	if _, member := pclq.Labels[apicommon.LabelPodCliqueScalingGroup]; member {
		return common.ComponentRollout{}, false, nil
	}
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: common.PodCliqueSetName(pclq)}, pcs); err != nil {
		return common.ComponentRollout{}, false, client.IgnoreNotFound(err)
	}
	replica, ok := common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex)
	if !ok {
		return common.ComponentRollout{}, false, nil
	}
	var deadline *metav1.Duration
	if ru := rollingUpdateOfClique(pcs, pclq); ru != nil {
		deadline = ru.ProgressDeadline
	}
	want := map[string]string{pclq.Name: pclq.Labels[apicommon.LabelPodTemplateHash]}
	return common.ComponentRolloutOf(pcs, replica, pods, want, pclq.Spec.Replicas, deadline), true, nil
}

// computeStatus counts the live pods and derives the conditions.
func computeStatus(pclq *corev1alpha1.PodClique, pods []*corev1.Pod) corev1alpha1.PodCliqueStatus {
	st := *pclq.Status.DeepCopy()
	templateHash := pclq.Labels[apicommon.LabelPodTemplateHash]
	var live, ready, scheduled, gated, updated, failing int32
	for _, p := range pods {
		if !common.IsActive(p) {
			continue
		}
		live++
		if common.IsReady(p) {
			ready++
		}
		if common.IsScheduled(p) {
			scheduled++
		}
		if len(p.Spec.SchedulingGates) > 0 {
			gated++
		}
		if templateHash != "" && p.Labels[apicommon.LabelPodTemplateHash] == templateHash {
			updated++
		}
		if common.IsFailing(p) {
			failing++
		}
	}
	st.Replicas, st.ReadyReplicas, st.ScheduledReplicas, st.ScheduleGatedReplicas, st.UpdatedReplicas = live, ready, scheduled, gated, updated
	st.ObservedGeneration = ptr.To(pclq.Generation)
	st.Selector = ptr.To(labels.SelectorFromSet(common.PodCliqueSelector(common.PodCliqueSetName(pclq), pclq.Name)).String())
	// The clique has converged on its template once every pod it wants runs it.
	if templateHash != "" && updated == live && live == pclq.Spec.Replicas {
		st.CurrentPodTemplateHash = ptr.To(templateHash)
		if gen, ok := pclq.Labels[apicommon.LabelPodCliqueSetGenerationHash]; ok {
			st.CurrentPodCliqueSetGenerationHash = ptr.To(gen)
		}
	}

	minAvailable := corev1alpha1.MinAvailableOf(&pclq.Spec)
	common.SetCondition(&st.Conditions, scheduledCondition(scheduled, minAvailable), pclq.Generation)
	previous := meta.FindStatusCondition(pclq.Status.Conditions, apicommon.ConditionMinAvailableBreached)
	placed := previous != nil && (previous.Status == metav1.ConditionTrue || previous.Reason == apicommon.ReasonSufficientReadyPods)
	common.SetCondition(&st.Conditions, minAvailableBreachedCondition(scheduled, failing, minAvailable, pclq.Spec.Replicas, placed), pclq.Generation)
	return st
}

func scheduledCondition(scheduled, minAvailable int32) metav1.Condition {
	if scheduled < minAvailable {
		return metav1.Condition{Type: apicommon.ConditionPodCliqueScheduled, Status: metav1.ConditionFalse,
			Reason:  apicommon.ReasonInsufficientScheduledPods,
			Message: fmt.Sprintf("%d of at least %d pods are scheduled", scheduled, minAvailable)}
	}
	return metav1.Condition{Type: apicommon.ConditionPodCliqueScheduled, Status: metav1.ConditionTrue,
		Reason:  apicommon.ReasonSufficientScheduledPods,
		Message: fmt.Sprintf("%d of at least %d pods are scheduled", scheduled, minAvailable)}
}

// minAvailableBreachedCondition is True when fewer than minAvailable pods are scheduled and
// ready (or still starting) in a clique that has been placed: one that had minAvailable pods
// scheduled at least once (placed, remembered by this condition itself). A clique that was
// never placed has lost nothing: a gang waiting for capacity must not be recreated for it.
// Gang termination acts on True.
func minAvailableBreachedCondition(scheduled, failing, minAvailable, replicas int32, placed bool) metav1.Condition {
	c := metav1.Condition{Type: apicommon.ConditionMinAvailableBreached}
	switch available := scheduled - failing; {
	case scheduled >= minAvailable && available >= minAvailable:
		c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonSufficientReadyPods
		c.Message = fmt.Sprintf("%d pods are ready or starting, at least minAvailable %d", available, minAvailable)
	case scheduled >= minAvailable:
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonInsufficientReadyPods
		c.Message = fmt.Sprintf("%d pods are ready or starting, fewer than minAvailable %d", available, minAvailable)
	case placed && replicas >= minAvailable:
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonInsufficientScheduledPods
		c.Message = fmt.Sprintf("%d pods are scheduled, fewer than minAvailable %d, after the clique had been placed", scheduled, minAvailable)
	default:
		// Also a clique scaled below minAvailable on purpose (to zero, say): nothing was lost.
		c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonInsufficientScheduledPods
		c.Message = fmt.Sprintf("%d of at least %d pods are scheduled; availability is judged once they are", scheduled, minAvailable)
	}
	return c
}
