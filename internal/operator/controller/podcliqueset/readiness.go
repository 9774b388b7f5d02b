package podcliqueset

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// maxReadyMessage bounds the Ready condition's message: it quotes a PodGang's reason, which
// may list many domains.
const maxReadyMessage = 1024

// setReadiness rolls the PodCliqueSet's PodGangs up into status: the gang counts and the Ready
// condition. It runs after computeStatus, whose availableReplicas it builds on.
func (r *Reconciler) setReadiness(ctx context.Context, st *state, status *corev1alpha1.PodCliqueSetStatus, pclqs []corev1alpha1.PodClique, gangs []schedv1alpha1.PodGang) error {
	pods, err := st.children.pods(ctx)
	if err != nil {
		return err
	}
	var owned []schedv1alpha1.PodGang
	for i := range gangs {
		if metav1.IsControlledBy(&gangs[i], st.stored) {
			owned = append(owned, gangs[i])
		}
	}
	cond, total, scheduled := readiness(st.pcs, status, owned, pods, pclqs)
	status.TotalPodGangs, status.ScheduledPodGangs = total, scheduled
	common.SetCondition(&status.Conditions, cond, st.stored.Generation)
	return nil
}

// readiness computes the Ready condition and the gang counts. A PodGang counts as scheduled
// when grove-scheduler says so (Scheduled=True) or, for a backend that writes no Scheduled
// condition, when each of its PodGroups has minReplicas pods bound. Ready is True when every
// PodGang of the wanted replicas is scheduled and every wanted replica is available; otherwise
// it is False with the first obstacle in replica order, quoting the PodGang's own reason.
func readiness(pcs *corev1alpha1.PodCliqueSet, status *corev1alpha1.PodCliqueSetStatus, gangs []schedv1alpha1.PodGang,
	pods []corev1.Pod, pclqs []corev1alpha1.PodClique) (metav1.Condition, int32, int32) {
	cond := metav1.Condition{Type: apicommon.ConditionReady, Status: metav1.ConditionFalse}
	if pcs.DeletionTimestamp != nil {
		cond.Reason, cond.Message = apicommon.ReasonPodCliqueSetDeleting, "the PodCliqueSet is being deleted"
		return cond, 0, 0
	}
	type ranked struct {
		replica int
		gang    *schedv1alpha1.PodGang
	}
	var wanted []ranked
	for i := range gangs {
		g := &gangs[i]
		replica, ok := common.IntLabel(g, apicommon.LabelPodCliqueSetReplicaIndex)
		if !ok || replica >= int(pcs.Spec.Replicas) || common.IsTerminating(g) {
			continue
		}
		wanted = append(wanted, ranked{replica, g})
	}
	// The replica's base gang sorts before its scaled gangs (its name is their prefix).
	sort.Slice(wanted, func(i, j int) bool {
		if wanted[i].replica != wanted[j].replica {
			return wanted[i].replica < wanted[j].replica
		}
		return wanted[i].gang.Name < wanted[j].gang.Name
	})
	bound := boundPods(pods)
	var total, scheduled int32
	var first *metav1.Condition
	for _, w := range wanted {
		total++
		ok, reason, message := gangScheduled(w.gang, bound)
		if ok {
			scheduled++
			continue
		}
		if first == nil {
			first = &metav1.Condition{Reason: reason, Message: message}
		}
	}
	switch {
	case pcs.Spec.Replicas == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, apicommon.ReasonPodCliqueSetReady, "the PodCliqueSet has no replicas"
	case first != nil:
		cond.Reason, cond.Message = first.Reason, first.Message
	case total == 0:
		cond.Reason, cond.Message = apicommon.ReasonPodGangsNotCreated, "no PodGang exists yet"
	case status.AvailableReplicas < pcs.Spec.Replicas:
		cond.Reason = apicommon.ReasonReplicasUnavailable
		cond.Message = fmt.Sprintf("%d of %d replicas available; %s", status.AvailableReplicas, pcs.Spec.Replicas,
			firstShortClique(pcs, pclqs))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, apicommon.ReasonPodCliqueSetReady
		cond.Message = fmt.Sprintf("all %d PodGangs are scheduled and all %d replicas are available", total, pcs.Spec.Replicas)
	}
	if len(cond.Message) > maxReadyMessage {
		cond.Message = cond.Message[:maxReadyMessage-3] + "..."
	}
	return cond, total, scheduled
}

// boundPods counts, per PodGang and PodClique, the live pods bound to a node.
func boundPods(pods []corev1.Pod) map[[2]string]int32 {
	bound := map[[2]string]int32{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || !common.IsActive(p) {
			continue
		}
		bound[[2]string{p.Labels[apicommon.LabelPodGang], p.Labels[apicommon.LabelPodClique]}]++
	}
	return bound
}

// gangScheduled tells whether a PodGang's quorum is placed and, if not, why in a condition
// reason and message.
func gangScheduled(g *schedv1alpha1.PodGang, bound map[[2]string]int32) (bool, string, string) {
	if c := apimeta.FindStatusCondition(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled); c != nil {
		if c.Status == metav1.ConditionTrue {
			return true, "", ""
		}
		what, reason := "not scheduled", apicommon.ReasonPodGangNotScheduled
		if apicommon.IsUnschedulable(c.Reason) {
			what, reason = "unschedulable", apicommon.ReasonPodGangUnschedulable
		} else if c.Reason == apicommon.ReasonWaitingForPods {
			what = "waiting for its pods"
		}
		msg := fmt.Sprintf("PodGang %s %s", g.Name, what)
		if m := strings.TrimSpace(c.Message); m != "" {
			msg += ": " + m
		}
		return false, reason, msg
	}
	// No Scheduled condition: a backend other than grove-scheduler; judge by the pods.
	var short []string
	for _, pg := range g.Spec.PodGroups {
		if n := bound[[2]string{g.Name, pg.Name}]; n < pg.MinReplicas {
			short = append(short, fmt.Sprintf("%s has %d of %d pods bound", pg.Name, n, pg.MinReplicas))
		}
	}
	if len(short) == 0 {
		return true, "", ""
	}
	return false, apicommon.ReasonPodGangNotScheduled, fmt.Sprintf("PodGang %s not scheduled: %s", g.Name, strings.Join(short, ", "))
}

// firstShortClique names the first PodClique of a wanted replica with fewer ready pods than its
// minAvailable.
func firstShortClique(pcs *corev1alpha1.PodCliqueSet, pclqs []corev1alpha1.PodClique) string {
	type ranked struct {
		replica int
		*corev1alpha1.PodClique
	}
	sorted := make([]ranked, 0, len(pclqs))
	for i := range pclqs {
		p := &pclqs[i]
		replica, ok := common.IntLabel(p, apicommon.LabelPodCliqueSetReplicaIndex)
		if ok && replica < int(pcs.Spec.Replicas) && !common.IsTerminating(p) {
			sorted = append(sorted, ranked{replica, p})
		}
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].replica != sorted[j].replica {
			return sorted[i].replica < sorted[j].replica
		}
		return sorted[i].Name < sorted[j].Name
	})
	for _, p := range sorted {
		if minimum := corev1alpha1.MinAvailableOf(&p.Spec); p.Status.ReadyReplicas < minimum {
			return fmt.Sprintf("PodClique %s has %d of at least %d pods ready", p.Name, p.Status.ReadyReplicas, minimum)
		}
	}
	return "waiting for the replicas' PodCliques"
}
