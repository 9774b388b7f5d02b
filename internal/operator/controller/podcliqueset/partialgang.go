package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// partialGangs makes a PodGang whole-or-nothing again when it stays partly bound: some members
// bound to nodes while a PodGroup has fewer than minReplicas bound. Binding is one write per
// pod, so a scheduler that crashes between two bindings, or a node lost while the gang binds,
// can leave such a gang; if the rest's capacity is then taken, nothing else would ever finish
// or undo it. After PartialBindingTimeout its bound members are deleted: the PodClique
// controller recreates them gated, and the scheduler places the gang again as a whole.
//
// Only gangs that never had their quorum are looked at: a gang all of whose PodCliques were
// placed once and then lost pods is gang termination's (terminationDelay). A gang whose
// PodGroups all have minReplicas bound is complete, whatever elastic pods above it wait.
//
// The clock is the bound members' own binding time (their PodScheduled condition), so it
// survives operator restarts; the PodGang's Unhealthy condition shows the state once it lasts
// longer than a binding takes. That condition is the operator's second entry in PodGang status
// (after Initialized), applied under a field manager of its own (PartialGangFieldManager).
type partialGangs struct{ r *Reconciler }

func (*partialGangs) Name() string { return "partial-gang" }

func (*partialGangs) Delete(context.Context, *state) error { return nil }

// partialGangReportAfter is how long a gang is partly bound before its condition says so:
// every gang is partly bound for the moment its members bind, which is not worth two writes.
const partialGangReportAfter = 10 * time.Second

// partialGang is what partialGangs observed of one PodGang.
type partialGang struct {
	bound []*corev1.Pod
	// short lists the PodGroups below minReplicas bound, with their counts.
	short []string
	// since is when the earliest bound member was bound.
	since time.Time
}

func (c *partialGangs) timeout() time.Duration {
	if c.r.PartialBindingTimeout > 0 {
		return c.r.PartialBindingTimeout
	}
	return configv1alpha1.DefaultPartialBindingTimeout
}

func (c *partialGangs) Sync(ctx context.Context, st *state) error {
	if !placesWholeGangs(st.backend) {
		return nil // a backend that binds pod by pod leaves gangs partly bound by design
	}
	owned, err := st.children.ownedPodGangs(ctx, st.stored)
	if err != nil || len(owned) == 0 {
		return err
	}
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return err
	}
	placed := map[string]bool{}
	for i := range pclqs {
		placed[pclqs[i].Name] = wasPlaced(&pclqs[i])
	}
	pods, err := st.children.pods(ctx)
	if err != nil {
		return err
	}
	members := map[string][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		owner := metav1.GetControllerOf(p)
		if !common.IsActive(p) || owner == nil || owner.Kind != "PodClique" {
			continue
		}
		members[p.Labels[apicommon.LabelPodGang]] = append(members[p.Labels[apicommon.LabelPodGang]], p)
	}
	now := time.Now()
	var errs []error
	for _, pg := range owned {
		if common.IsTerminating(pg) {
			continue
		}
		errs = append(errs, c.syncGang(ctx, st, pg, observePartial(pg, members[pg.Name], placed), now))
	}
	return errors.Join(errs...)
}

// placesWholeGangs reports whether the backend places PodGangs all-or-nothing.
func placesWholeGangs(b backend.Backend) bool {
	if b == nil {
		return false
	}
	if r, ok := b.(backend.GangCapabilityReporter); ok {
		available, _ := r.GangSchedulingAvailable()
		return available
	}
	return true
}

// wasPlaced reports whether a PodClique has had minAvailable pods scheduled at least once,
// as its MinAvailableBreached condition remembers.
func wasPlaced(p *corev1alpha1.PodClique) bool {
	c := meta.FindStatusCondition(p.Status.Conditions, apicommon.ConditionMinAvailableBreached)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == apicommon.ReasonSufficientReadyPods)
}

// observePartial returns the partial state of a PodGang, or nil when it is not partly bound
// (nothing bound, every PodGroup at its minReplicas, or a gang that once had its quorum).
func observePartial(pg *schedv1alpha1.PodGang, members []*corev1.Pod, placed map[string]bool) *partialGang {
	boundIn := map[string]int32{}
	out := &partialGang{}
	for _, p := range members {
		if common.IsScheduled(p) {
			boundIn[p.Labels[apicommon.LabelPodClique]]++
			out.bound = append(out.bound, p)
			if t := boundAt(p); out.since.IsZero() || t.Before(out.since) {
				out.since = t
			}
		}
	}
	if len(out.bound) == 0 {
		return nil
	}
	allPlaced := true
	for _, g := range pg.Spec.PodGroups {
		allPlaced = allPlaced && placed[g.Name]
		if boundIn[g.Name] < g.MinReplicas {
			out.short = append(out.short, fmt.Sprintf("%s has %d of %d", g.Name, boundIn[g.Name], g.MinReplicas))
		}
	}
	if len(out.short) == 0 || allPlaced {
		return nil
	}
	slices.SortFunc(out.bound, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// boundAt is when the pod was bound: its PodScheduled condition's transition, else its creation.
func boundAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

func (c *partialGangs) syncGang(ctx context.Context, st *state, pg *schedv1alpha1.PodGang, partial *partialGang, now time.Time) error {
	current := meta.FindStatusCondition(pg.Status.Conditions, schedv1alpha1.PodGangConditionUnhealthy)
	reporting := current != nil && current.Status == metav1.ConditionTrue && current.Reason == apicommon.ReasonPartiallyBound
	if partial == nil {
		if !reporting {
			return nil
		}
		return c.setCondition(ctx, st, pg, metav1.Condition{Type: schedv1alpha1.PodGangConditionUnhealthy, Status: metav1.ConditionFalse,
			Reason: apicommon.ReasonPartialBindingResolved, Message: "no PodGroup is partly bound any more"})
	}
	timeout := c.timeout()
	since := partial.since
	if reporting && current.LastTransitionTime.Before(&metav1.Time{Time: since}) {
		since = current.LastTransitionTime.Time
	}
	deadline := since.Add(timeout)
	what := fmt.Sprintf("%d members are bound while %s minReplicas bound", len(partial.bound), strings.Join(partial.short, ", "))
	if now.Before(deadline) {
		st.requeueAfter(deadline.Sub(now))
		if reporting || now.Sub(since) < min(partialGangReportAfter, timeout/2) {
			if !reporting {
				st.requeueAfter(min(partialGangReportAfter, timeout/2) - now.Sub(since))
			}
			return nil
		}
		// The transition time is when the gang became partly bound, not when this was noticed.
		return c.setCondition(ctx, st, pg, metav1.Condition{Type: schedv1alpha1.PodGangConditionUnhealthy, Status: metav1.ConditionTrue,
			Reason: apicommon.ReasonPartiallyBound, LastTransitionTime: metav1.NewTime(since),
			Message: fmt.Sprintf("%s; unless the gang completes, they are released at %s", what, deadline.UTC().Format(time.RFC3339))})
	}
	names := make([]string, len(partial.bound))
	for i, p := range partial.bound {
		names[i] = p.Name
	}
	msg := fmt.Sprintf("the gang stayed partly bound for longer than %s (%s): its bound members %s are deleted and recreated, to be placed again with the whole gang",
		timeout, what, strings.Join(names, ", "))
	st.children.wrote(childPods)
	if err := c.setCondition(ctx, st, pg, metav1.Condition{Type: schedv1alpha1.PodGangConditionUnhealthy, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonPartialGangReleased, Message: msg}); err != nil {
		return err
	}
	var errs []error
	for _, p := range partial.bound {
		errs = append(errs, common.Delete(ctx, c.r.Client, p))
	}
	c.r.Recorder.Eventf(pg, st.stored, corev1.EventTypeWarning, apicommon.ReasonPartialGangReleased, "ReleasePartialGang", "%s", msg)
	c.r.Recorder.Eventf(st.stored, pg, corev1.EventTypeWarning, apicommon.ReasonPartialGangReleased, "ReleasePartialGang", "PodGang %s: %s", pg.Name, msg)
	return errors.Join(errs...)
}

// setCondition applies the PodGang's Unhealthy condition under the partial-gang field manager:
// the scheduler's conditions and the operator's Initialized are other managers' entries.
func (c *partialGangs) setCondition(ctx context.Context, st *state, pg *schedv1alpha1.PodGang, cond metav1.Condition) error {
	st.children.wrote(childPodGangs)
	return applyPodGangCondition(ctx, c.r.Client, pg, apicommon.PartialGangFieldManager, cond)
}
