package podcliqueset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// setUpdateInProgressCondition rolls upstream Grove's UpdateInProgress condition up from the
// PodCliqueSet's standalone PodCliques and scaling groups, which each report their own part of an
// update (common.UpdateInProgressCondition), as upstream #817 does: a child whose condition is
// True or Unknown is being updated, one that is Unknown passed its progressDeadline. Any such
// child makes the PodCliqueSet Unknown (ProgressDeadlineExceeded), else any child being updated
// makes it True (Progressing), else it is False (NoActiveUpdate). The children's own controllers
// keep the deadline clock and come back when it runs out; their status change brings this
// reconcile, so nothing here waits on a timer.
func setUpdateInProgressCondition(status *corev1alpha1.PodCliqueSetStatus, st *state, pclqs []corev1alpha1.PodClique, pcsgs []corev1alpha1.PodCliqueScalingGroup) {
	var cliques, groups childUpdates
	for i := range pclqs {
		if p := &pclqs[i]; ownChild(st, p) {
			cliques.add(p.Name, p.Status.Conditions)
		}
	}
	for i := range pcsgs {
		if g := &pcsgs[i]; ownChild(st, g) {
			groups.add(g.Name, g.Status.Conditions)
		}
	}
	c := metav1.Condition{Type: apicommon.ConditionUpdateInProgress, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonNoActiveUpdate, Message: "no PodClique or PodCliqueScalingGroup is being updated"}
	switch {
	case len(cliques.stuck)+len(groups.stuck) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, apicommon.ReasonProgressDeadlineExceeded
		var parts []string
		if cliques.rolling > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d PodCliques being updated passed their progressDeadline%s", len(cliques.stuck), cliques.rolling, nameList(cliques.stuck)))
		}
		if groups.rolling > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d PodCliqueScalingGroups being updated passed their progressDeadline%s", len(groups.stuck), groups.rolling, nameList(groups.stuck)))
		}
		c.Message = strings.Join(parts, "; ") + "; nothing was rolled back or deleted"
	case cliques.rolling+groups.rolling > 0:
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonProgressing
		c.Message = fmt.Sprintf("%d PodCliques and %d PodCliqueScalingGroups are being updated", cliques.rolling, groups.rolling)
	}
	common.SetCondition(&status.Conditions, c, st.stored.Generation)
}

// ownChild: a standalone PodClique or scaling group of a replica the PodCliqueSet wants (one of
// a replica being scaled in no longer counts), not on its way out.
func ownChild(st *state, obj client.Object) bool {
	i, ok := common.IntLabel(obj, apicommon.LabelPodCliqueSetReplicaIndex)
	return ok && i < int(st.pcs.Spec.Replicas) && metav1.IsControlledBy(obj, st.stored) && !common.IsTerminating(obj)
}

// childUpdates counts children of one kind being updated and names those past their deadline.
type childUpdates struct {
	rolling int
	stuck   []string
}

func (u *childUpdates) add(name string, conditions []metav1.Condition) {
	c := meta.FindStatusCondition(conditions, apicommon.ConditionUpdateInProgress)
	if c == nil || c.Status == metav1.ConditionFalse {
		return
	}
	u.rolling++
	if c.Status == metav1.ConditionUnknown {
		u.stuck = append(u.stuck, name)
	}
}

// nameList names the first few children, so the message stays short with many replicas.
func nameList(names []string) string {
	const shown = 5
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	if len(names) > shown {
		return fmt.Sprintf(" (%s and %d more)", strings.Join(names[:shown], ", "), len(names)-shown)
	}
	return " (" + strings.Join(names, ", ") + ")"
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
