package common

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// ComponentRollout is one component's (a standalone PodClique's or a scaling group's) part in an
// update of its PodCliqueSet replica, read from its pods.
type ComponentRollout struct {
	// Rolling: the replica is being updated and the component still has an outdated pod, or
	// fewer ready pods of its current template than it wants.
	Rolling bool
	// Since is when the component last made progress: the replica's update started, or a pod
	// of the current template was created or became ready, whichever is latest.
	Since time.Time
	// Deadline is the component's rollingUpdate.progressDeadline (nil: none).
	Deadline *metav1.Duration
}

// ComponentRolloutOf reads the component's part in the update of PodCliqueSet replica replica:
// want maps each of the component's PodCliques to the pod template hash its pods should carry,
// desired is how many ready pods of those templates the component wants.
func ComponentRolloutOf(pcs *corev1alpha1.PodCliqueSet, replica int, pods []*corev1.Pod, want map[string]string,
	desired int32, deadline *metav1.Duration) ComponentRollout {
	out := ComponentRollout{Deadline: deadline}
	if !IsReplicaBeingUpdated(pcs, replica) {
		return out
	}
	for _, u := range pcs.Status.UpdateProgress.CurrentlyUpdating {
		if int(u.ReplicaIndex) == replica {
			out.Since = u.UpdateStartedAt.Time
		}
	}
	var ready int32
	for _, p := range pods {
		h, ok := want[p.Labels[apicommon.LabelPodClique]]
		if !ok || !IsActive(p) {
			continue
		}
		if p.Labels[apicommon.LabelPodTemplateHash] != h {
			out.Rolling = true
			continue
		}
		out.Since = latest(out.Since, p.CreationTimestamp.Time)
		if IsReady(p) {
			ready++
			out.Since = latest(out.Since, readySince(p))
		}
	}
	out.Rolling = out.Rolling || ready < desired
	return out
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readySince is when the pod last became ready.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// UpdateInProgressCondition is upstream Grove's UpdateInProgress condition of one component:
// False (NoActiveUpdate) when it is not being rolled, True (Progressing) while it is, Unknown
// (ProgressDeadlineExceeded) once it made no progress for its progressDeadline. recheck is how
// long until that deadline passes (0 when there is none to wait for): nothing else wakes the
// component's controller then.
func UpdateInProgressCondition(r ComponentRollout, now time.Time) (c metav1.Condition, recheck time.Duration) {
	c = metav1.Condition{Type: apicommon.ConditionUpdateInProgress}
	if !r.Rolling {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, apicommon.ReasonNoActiveUpdate, "no update of this component is under way"
		return c, 0
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, apicommon.ReasonProgressing, "its pods are being replaced from the updated template"
	if r.Deadline == nil {
		return c, 0
	}
	if left := r.Since.Add(r.Deadline.Duration).Sub(now); left > 0 {
		return c, left
	}
	c.Status, c.Reason = metav1.ConditionUnknown, apicommon.ReasonProgressDeadlineExceeded
	c.Message = fmt.Sprintf("no pod of the updated template was created or became ready since %s (progressDeadline %s); nothing was rolled back or deleted",
		r.Since.UTC().Format(time.RFC3339), r.Deadline.Duration)
	return c, 0
}
