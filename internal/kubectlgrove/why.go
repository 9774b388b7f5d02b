package kubectlgrove

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Kinds `why` explains, with the names kubectl users type for them.
var whyKinds = map[string]string{
	"pcs": "PodCliqueSet", "podcliqueset": "PodCliqueSet", "podcliquesets": "PodCliqueSet",
	"pgang": "PodGang", "podgang": "PodGang", "podgangs": "PodGang",
	"pod": "Pod", "pods": "Pod", "po": "Pod",
}

// maxGangsExplained bounds how many blocked PodGangs `why PCS` walks through.
const maxGangsExplained = 3

// ParseRef splits "kind/name" or "kind name" into the kind `why` explains and the name.
func ParseRef(args []string) (kind, name string, err error) {
	switch len(args) {
	case 1:
		k, n, ok := strings.Cut(args[0], "/")
		if !ok {
			return "", "", fmt.Errorf("expected KIND/NAME or KIND NAME (KIND is pcs, pgang or pod), got %q", args[0])
		}
		args = []string{k, n}
	case 2:
	default:
		return "", "", fmt.Errorf("expected KIND/NAME or KIND NAME (KIND is pcs, pgang or pod)")
	}
	kind, ok := whyKinds[strings.ToLower(args[0])]
	if !ok || args[1] == "" {
		return "", "", fmt.Errorf("cannot explain %q: KIND is pcs, pgang or pod", strings.Join(args, "/"))
	}
	return kind, args[1], nil
}

// Why writes the chain of reasons that holds a PodCliqueSet, PodGang or pod back, each in plain
// words, ending with the next thing to do.
func Why(ctx context.Context, c Clients, ns, kind, name string, w io.Writer) error {
	x := &explainer{c: c, ns: ns, w: w}
	switch kind {
	case "PodCliqueSet":
		return x.podCliqueSet(ctx, name)
	case "PodGang":
		return x.podGang(ctx, name, "")
	case "Pod":
		return x.pod(ctx, name)
	}
	return fmt.Errorf("cannot explain a %s", kind)
}

type explainer struct {
	c  Clients
	ns string
	w  io.Writer
}

func (x *explainer) say(indent, format string, args ...any) {
	fmt.Fprintf(x.w, indent+format+"\n", args...)
}

func (x *explainer) podCliqueSet(ctx context.Context, name string) error {
	pcs, err := x.c.Grove.GroveV1alpha1().PodCliqueSets(x.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := apimeta.FindStatusCondition(pcs.Status.Conditions, common.ConditionReady)
	switch {
	case ready == nil:
		x.say("", "PodCliqueSet %s/%s: no Ready condition yet (is grove-operator running?)", x.ns, name)
	case ready.Status == metav1.ConditionTrue:
		x.say("", "PodCliqueSet %s/%s is Ready: %s", x.ns, name, ready.Message)
		return nil
	default:
		x.say("", "PodCliqueSet %s/%s is not Ready (%s): %s", x.ns, name, ready.Reason, ready.Message)
	}
	x.say("  ", "replicas: %d wanted, %d available; PodGangs: %d of %d scheduled",
		pcs.Spec.Replicas, pcs.Status.AvailableReplicas, pcs.Status.ScheduledPodGangs, pcs.Status.TotalPodGangs)
	for _, e := range pcs.Status.LastErrors {
		x.say("  ", "operator error %s: %s", e.Code, e.Description)
	}
	for _, cond := range pcs.Status.Conditions {
		// An exhausted replacement budget is False but lasting: it is why a replica stays short.
		exhausted := cond.Type == common.ConditionMemberReplacing && cond.Reason == common.ReasonReplacementBudgetExhausted
		if cond.Type != common.ConditionReady && (cond.Status == metav1.ConditionTrue || exhausted) {
			x.say("  ", "condition %s (%s): %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	gangs, err := x.c.Grove.SchedulerV1alpha1().PodGangs(x.ns).List(ctx, metav1.ListOptions{LabelSelector: selector(common.LabelPartOfKey, name)})
	if err != nil {
		return err
	}
	sort.Slice(gangs.Items, func(i, j int) bool { return gangs.Items[i].Name < gangs.Items[j].Name })
	explained := 0
	for i := range gangs.Items {
		g := &gangs.Items[i]
		if apimeta.IsStatusConditionTrue(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled) {
			continue
		}
		if explained == maxGangsExplained {
			x.say("  ", "(more PodGangs are not scheduled: kubectl grove why pgang/NAME)")
			break
		}
		explained++
		if err := x.podGang(ctx, g.Name, "  "); err != nil {
			return err
		}
	}
	if explained == 0 && len(gangs.Items) > 0 && pcs.Status.AvailableReplicas < pcs.Spec.Replicas {
		return x.notReadyPods(ctx, name, "  ")
	}
	if len(gangs.Items) == 0 && pcs.Spec.Replicas > 0 {
		x.say("  ", "next: no PodGang exists; check the operator's log and the PodCliqueSet's events (kubectl describe pcs %s)", name)
	}
	return nil
}

// notReadyPods names the pods of a placed PodCliqueSet that are not ready, and why.
func (x *explainer) notReadyPods(ctx context.Context, pcsName, indent string) error {
	pods, err := x.c.Kube.CoreV1().Pods(x.ns).List(ctx, metav1.ListOptions{LabelSelector: selector(common.LabelPartOfKey, pcsName)})
	if err != nil {
		return err
	}
	shown := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if isReady(p) || p.DeletionTimestamp != nil {
			continue
		}
		if shown++; shown > 5 {
			break
		}
		x.say(indent, "pod %s is %s on %s%s", p.Name, p.Status.Phase, orDash(p.Spec.NodeName), containerTrouble(p))
	}
	x.say(indent, "next: every gang is placed; the pods above must become ready (kubectl describe pod, kubectl logs)")
	return nil
}

func (x *explainer) pod(ctx context.Context, name string) error {
	p, err := x.c.Kube.CoreV1().Pods(x.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	gang := p.Labels[common.LabelPodGang]
	x.say("", "Pod %s/%s: %s%s", x.ns, name, podState(p), containerTrouble(p))
	if gang == "" {
		x.say("  ", "the pod belongs to no PodGang (no %s label): Grove does not schedule it as a gang", common.LabelPodGang)
		return nil
	}
	if p.Spec.NodeName != "" && isReady(p) {
		x.say("  ", "the pod runs on %s and is ready; its PodGang is %s", p.Spec.NodeName, gang)
		return nil
	}
	return x.podGang(ctx, gang, "  ")
}

// podGang explains one PodGang: pods and gates, quorum, the scheduler's verdict, preemption,
// and recent warning events, then the next action.
func (x *explainer) podGang(ctx context.Context, name, indent string) error {
	g, err := x.c.Grove.SchedulerV1alpha1().PodGangs(x.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	scheduled := apimeta.FindStatusCondition(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
	verdict := "not scheduled"
	if scheduled != nil && scheduled.Status == metav1.ConditionTrue {
		verdict = "scheduled"
	}
	x.say(indent, "PodGang %s/%s is %s (phase %s)", x.ns, name, verdict, orDash(string(g.Status.Phase)))
	in := indent + "  "
	pods, err := x.c.Kube.CoreV1().Pods(x.ns).List(ctx, metav1.ListOptions{LabelSelector: selector(common.LabelPodGang, name)})
	if err != nil {
		return err
	}
	live, gated, bound := 0, 0, 0
	var preempted, nominated []string
	byGroup := map[string][3]int32{} // live, bound, gated
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		live++
		n := byGroup[p.Labels[common.LabelPodClique]]
		n[0]++
		if p.Spec.NodeName != "" {
			bound++
			n[1]++
		}
		if len(p.Spec.SchedulingGates) > 0 {
			gated++
			n[2]++
		}
		byGroup[p.Labels[common.LabelPodClique]] = n
		if c := podCondition(p, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
			preempted = append(preempted, fmt.Sprintf("%s (%s: %s)", p.Name, c.Reason, c.Message))
		}
		if p.Status.NominatedNodeName != "" {
			nominated = append(nominated, fmt.Sprintf("%s → %s", p.Name, p.Status.NominatedNodeName))
		}
	}
	step := 0
	next := ""
	reason := func(format string, args ...any) {
		step++
		x.say(in, "%d. "+format, append([]any{step}, args...)...)
	}
	reason("pods: %d exist, %d bound to nodes, %d still gated", live, bound, gated)

	if init := apimeta.FindStatusCondition(g.Status.Conditions, schedv1alpha1.PodGangConditionInitialized); init != nil && init.Status != metav1.ConditionTrue {
		reason("not every pod of the gang exists yet (%s): %s", init.Reason, init.Message)
		next = "grove-operator is still creating the pods; look for a ResourceQuota, LimitRange or webhook rejecting them (kubectl get events, the PodCliqueSet's status.lastErrors)"
	}
	if gated > 0 {
		reason("%d pods carry the scheduling gate %s: grove-operator lifts it once the PodGang lists every pod of its quorum", gated, common.SchedulingGatePodGangPendingCreation)
		if next == "" {
			next = "wait for grove-operator to lift the gates; if they stay, check its log and the PodCliqueSet's status.lastErrors"
		}
	}
	for _, pg := range g.Spec.PodGroups {
		n := byGroup[pg.Name]
		switch {
		case n[0] < pg.MinReplicas:
			reason("quorum: PodClique %s has %d of the %d pods its gang needs", pg.Name, n[0], pg.MinReplicas)
			if next == "" {
				next = "the gang waits for its quorum of pods to exist; check why they are not created"
			}
		case n[1] < pg.MinReplicas && verdict == "scheduled":
			reason("quorum: PodClique %s has %d of %d pods bound", pg.Name, n[1], pg.MinReplicas)
		}
	}
	switch {
	case scheduled == nil:
		sched := g.Labels[common.LabelSchedulerName]
		if sched == "" || sched == "grove-scheduler" {
			reason("grove-scheduler has not reported on this gang yet")
			if next == "" {
				next = "make sure grove-scheduler runs and the pods' schedulerName is grove-scheduler"
			}
		} else {
			reason("the gang is handed to scheduler %s, which writes no Scheduled condition; see its objects and the pods' events", sched)
		}
	case scheduled.Status == metav1.ConditionTrue:
		reason("grove-scheduler placed the quorum: %s", scheduled.Message)
		if g.Status.PlacementScore != nil {
			reason("placement score %.2f (1.00: every member shares its narrowest pack domain)", *g.Status.PlacementScore)
		}
	default:
		reason("grove-scheduler: %s — %s", scheduled.Reason, scheduled.Message)
		if next == "" {
			next = nextForScheduler(scheduled)
		}
	}
	if mr := apimeta.FindStatusCondition(g.Status.Conditions, common.ConditionMemberReplacing); mr != nil && mr.Reason != common.ReasonMembersReplaced {
		reason("grove-operator: %s — %s", mr.Reason, mr.Message)
		if next == "" && mr.Status == metav1.ConditionTrue {
			next = "the replacements are placed next to the members that kept running once there is room in their domain; the others are not restarted"
		}
	}
	for _, p := range preempted {
		reason("preempted: %s", p)
	}
	if len(nominated) > 0 {
		reason("preemption in progress, nominated: %s", strings.Join(nominated, ", "))
		if next == "" {
			next = "victims are being evicted to make room; the gang binds once they are gone"
		}
	}
	events, err := x.warnings(ctx, "PodGang", name)
	if err != nil {
		return err
	}
	for _, e := range events {
		reason("event %s (×%d, %s ago): %s", e.Reason, max(e.Count, 1), since(e), e.Message)
	}
	if next == "" && verdict == "scheduled" {
		if bound < live {
			next = fmt.Sprintf("the quorum is placed; the other %d pods are placed as room appears", live-bound)
		} else {
			next = "nothing blocks this gang; if its pods are not ready, see kubectl grove why pod/NAME"
		}
	}
	if next != "" {
		x.say(in, "next: %s", next)
	}
	return nil
}

// nextForScheduler turns a Scheduled=False condition into the action most likely to help. It
// reads the condition's reason — grove-scheduler's cause as data — never the message's words.
func nextForScheduler(c *metav1.Condition) string {
	switch c.Reason {
	case common.ReasonWaitingForPods:
		return "the scheduler waits for the gang's quorum of pods to exist and be ungated"
	case common.ReasonReservedForOtherGang:
		return "nodes are reserved for a gang that has waited longer; this one is placed after it binds or its reservation lapses"
	case common.ReasonDevicesUnavailable:
		return "free or add devices (ResourceSlices) in one allowed domain, or lower the gang's device requests"
	case common.ReasonNoDomainFits:
		return "free capacity inside one domain of the required level, lower minAvailable so the quorum fits, or relax the PodCliqueSet's topologyConstraint to a wider level"
	case common.ReasonRoleAffinityUnsatisfiable:
		return "it would fit, but not with its roles together or apart as a required affinityGroups or antiAffinityGroups entry asks: free room in one domain (together) or add domains (apart), or make the group ScheduleAnyway"
	case common.ReasonReplicaSpreadUnsatisfiable:
		return "every domain that would hold it runs another replica of the PodCliqueSet (a required replicaSpreadConstraint): add a domain, scale the PodCliqueSet down, or make the spread ScheduleAnyway"
	case common.ReasonSliceUnsatisfiable:
		return "the gang's domain holds its pods but not each slice of a clique (a required topologyConstraint.slice) in a domain of its own: free room in more domains of the slice level, or make the slice ScheduleAnyway"
	case common.ReasonFilterRejected:
		return "the room is there but a filter refuses it (node affinity, taints, pod anti-affinity, host ports, volumes): check the pods' constraints against the nodes of the domain, e.g. kubectl describe pod"
	case common.ReasonReservationReuseRequired:
		return "the update's replacing pods wait for room in the domain the gang had before (updateStrategy.reuseReservation: Required): free room there, or set reuseReservation to Preferred to let them move"
	case common.ReasonAttemptFailed:
		return "the gang got nodes but lost them before all were bound (Permit timeout, a member rejected or failing to bind); it backs off and tries again — look at its pods' events"
	default:
		return "add capacity (or free it by scaling other workloads down), or lower the gang's minAvailable / requests"
	}
}

// warnings lists the recent warning events about an object, newest first, one per reason.
func (x *explainer) warnings(ctx context.Context, kind, name string) ([]corev1.Event, error) {
	// The apiserver filters by the involved object; the loop below still checks, cheaply.
	list, err := x.c.Kube.CoreV1().Events(x.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": kind, "involvedObject.name": name, "type": corev1.EventTypeWarning}.String()})
	if err != nil {
		return nil, err
	}
	latest := map[string]corev1.Event{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name || e.Type != corev1.EventTypeWarning {
			continue
		}
		if prev, ok := latest[e.Reason]; !ok || eventTime(e).After(eventTime(prev).Time) {
			latest[e.Reason] = e
		}
	}
	out := make([]corev1.Event, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j]).Time) })
	return out, nil
}

func eventTime(e corev1.Event) metav1.Time {
	switch {
	case e.Series != nil:
		return metav1.Time(e.Series.LastObservedTime)
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time(e.EventTime)
	}
	return e.CreationTimestamp
}

func since(e corev1.Event) string {
	t := eventTime(e)
	if t.IsZero() {
		return "?"
	}
	return metav1.Now().Sub(t.Time).Round(1e9).String()
}

func podState(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "terminating"
	case len(p.Spec.SchedulingGates) > 0:
		return "gated (not yet schedulable)"
	case p.Spec.NodeName == "":
		msg := "pending, not placed"
		if c := podCondition(p, corev1.PodScheduled); c != nil && c.Message != "" {
			msg += ": " + c.Message
		}
		return msg
	case isReady(p):
		return fmt.Sprintf("%s on %s, ready", p.Status.Phase, p.Spec.NodeName)
	}
	return fmt.Sprintf("%s on %s, not ready", p.Status.Phase, p.Spec.NodeName)
}

func containerTrouble(p *corev1.Pod) string {
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "" {
			return fmt.Sprintf(" (container %s waiting: %s)", s.Name, s.State.Waiting.Reason)
		}
	}
	return ""
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}
