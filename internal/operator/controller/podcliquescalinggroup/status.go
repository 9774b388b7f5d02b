package podcliquescalinggroup

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
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

// updateStatus writes the scaling group's status when it changed. observedGeneration advances
// only when the sync succeeded: a generation whose PodCliques could not be made is not observed.
// The status the reconcile computed is applied whole (common.ApplyStatus), never diffed
// against the cached group; conditions keep their transition time unless their status changes
// (computed from the observed status, which the consistency check keeps current).
// recheck is when the UpdateInProgress condition's progressDeadline runs out (0: never).
func (r *Reconciler) updateStatus(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup,
	members []*corev1alpha1.PodClique, pods *groupPods, hashes *hash.Templates, synced bool) (recheck time.Duration, err error) {
	status := computeStatus(pcsg, members, hashes.Generation())
	if !synced {
		status.ObservedGeneration = pcsg.Status.ObservedGeneration
	}
	rollout, err := r.rollout(ctx, pcs, pcsg, pods, hashes)
	if err != nil {
		return 0, err
	}
	cond, recheck := common.UpdateInProgressCondition(rollout, time.Now())
	common.SetCondition(&status.Conditions, cond, pcsg.Generation)
	if equality.Semantic.DeepEqual(status, pcsg.Status) {
		return recheck, nil
	}
	// This controller is the status' only writer (the PodCliqueSet controller asks for
	// GangTerminationInProgress through an annotation).
	desired := pcsg.DeepCopy()
	desired.Status = status
	return recheck, client.IgnoreNotFound(common.ApplyStatus(ctx, r.Client, desired, apicommon.ScalingGroupFieldManager))
}

// rollout reads the group's part in an update of its PodCliqueSet replica from the members'
// pods, measured against the template (as the PodCliqueSet's own UpdateInProgress is).
func (r *Reconciler) rollout(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup,
	listed *groupPods, hashes *hash.Templates) (common.ComponentRollout, error) {
	replica, _ := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	var deadline *metav1.Duration
	if ru := rollingUpdateOfGroup(pcs, pcsg); ru != nil {
		deadline = ru.ProgressDeadline
	}
	if !common.IsReplicaBeingUpdated(pcs, replica) {
		return common.ComponentRollout{Deadline: deadline}, nil
	}
	t := &pcs.Spec.Template
	want := map[string]string{}
	var desired int32
	for _, name := range pcsg.Spec.CliqueNames {
		c := t.Clique(name)
		if c == nil {
			continue
		}
		for j := range int(pcsg.Spec.Replicas) {
			want[apicommon.ScalingGroupPodCliqueName(pcsg.Name, j, name)] = hashes.Clique(name)
		}
		desired += c.Spec.Replicas * pcsg.Spec.Replicas
	}
	items, err := listed.list(ctx)
	if err != nil {
		return common.ComponentRollout{}, err
	}
	pods := make([]*corev1.Pod, len(items))
	for i := range items {
		pods[i] = &items[i]
	}
	return common.ComponentRolloutOf(pcs, replica, pods, want, desired, deadline), nil
}

// computeStatus judges each group replica by its PodCliques: scheduled when every member has
// minAvailable pods scheduled, available when every member has minAvailable pods ready,
// updated when every member has converged on the PodCliqueSet's generation.
func computeStatus(pcsg *corev1alpha1.PodCliqueScalingGroup, members []*corev1alpha1.PodClique, generationHash string) corev1alpha1.PodCliqueScalingGroupStatus {
	st := *pcsg.Status.DeepCopy()
	byReplica := map[int][]*corev1alpha1.PodClique{}
	for _, m := range members {
		if j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex); ok && !common.IsTerminating(m) {
			byReplica[j] = append(byReplica[j], m)
		}
	}
	var replicas, scheduled, available, updated int32
	for _, pclqs := range byReplica {
		if len(pclqs) != len(pcsg.Spec.CliqueNames) {
			continue
		}
		replicas++
		isScheduled, isAvailable, isUpdated := true, true, true
		for _, p := range pclqs {
			minAvailable := corev1alpha1.MinAvailableOf(&p.Spec)
			isScheduled = isScheduled && p.Status.ScheduledReplicas >= minAvailable
			isAvailable = isAvailable && p.Status.ReadyReplicas >= minAvailable
			isUpdated = isUpdated && ptr.Deref(p.Status.CurrentPodCliqueSetGenerationHash, "") == generationHash
		}
		if isScheduled {
			scheduled++
		}
		if isAvailable {
			available++
		}
		if isUpdated {
			updated++
		}
	}
	st.Replicas, st.ScheduledReplicas, st.AvailableReplicas, st.UpdatedReplicas = replicas, scheduled, available, updated
	st.ObservedGeneration = ptr.To(pcsg.Generation)
	st.Selector = ptr.To(labels.SelectorFromSet(map[string]string{
		apicommon.LabelManagedByKey:          apicommon.LabelManagedByValue,
		apicommon.LabelPartOfKey:             common.PodCliqueSetName(pcsg),
		apicommon.LabelPodCliqueScalingGroup: pcsg.Name,
	}).String())
	if updated == replicas && replicas == pcsg.Spec.Replicas {
		st.CurrentPodCliqueSetGenerationHash = ptr.To(generationHash)
	}
	common.SetCondition(&st.Conditions, minAvailableBreached(scheduled, available, ptr.Deref(pcsg.Spec.MinAvailable, 1)), pcsg.Generation)
	if c, ok := gangTermination(pcsg); ok {
		common.SetCondition(&st.Conditions, c, pcsg.Generation)
	}
	return st
}

// gangTermination is the GangTerminationInProgress condition the PodCliqueSet controller's
// annotation calls for: True with its message while present, False once removed after a
// recreation; no condition for a group that was never recreated.
func gangTermination(pcsg *corev1alpha1.PodCliqueScalingGroup) (metav1.Condition, bool) {
	c := metav1.Condition{Type: apicommon.ConditionGangTerminationInProgress}
	if msg, ok := pcsg.Annotations[apicommon.AnnotationGangTermination]; ok {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, apicommon.ReasonPodCliqueSetReplicaRecreating, msg
		return c, true
	}
	if !meta.IsStatusConditionTrue(pcsg.Status.Conditions, apicommon.ConditionGangTerminationInProgress) {
		return c, false // never recreated, or already reported as ended
	}
	c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonPodCliqueSetReplicaRecreated
	c.Message = "the PodCliques of the PodCliqueSet replica have been recreated"
	return c, true
}

// minAvailableBreached is True when fewer than minAvailable replicas are available after at
// least minAvailable were scheduled; before that the group has not been placed yet.
func minAvailableBreached(scheduled, available, minAvailable int32) metav1.Condition {
	c := metav1.Condition{Type: apicommon.ConditionMinAvailableBreached}
	switch {
	case scheduled < minAvailable:
		c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonInsufficientScheduledReplicas
		c.Message = fmt.Sprintf("%d of at least %d replicas are scheduled; availability is judged once they are", scheduled, minAvailable)
	case available < minAvailable:
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonInsufficientAvailableReplicas
		c.Message = fmt.Sprintf("%d replicas are available, fewer than minAvailable %d", available, minAvailable)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonSufficientAvailableReplicas
		c.Message = fmt.Sprintf("%d replicas are available, at least minAvailable %d", available, minAvailable)
	}
	return c
}
