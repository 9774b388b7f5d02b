package gang

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	groveclient "github.com/ai-dynamo/grove/pkg/client"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
)

// statusWriter keeps PodGang status current off the scheduling path: the Scheduled condition,
// the phase and the placement score, written by server-side apply so the operator's conditions
// are left alone. Updates of one gang are coalesced by a work queue.
type statusWriter struct {
	gangs    *gangcache.Shared
	ledger   *ledger.Ledger
	nodes    corelisters.NodeLister
	recorder events.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
	// The last status applied per gang is kept in the gang's record (gangcache.Written), so
	// that a write the informer has not shown yet is not repeated; the one worker touches it.
	clock clock.PassiveClock
}

func (w *statusWriter) now() time.Time {
	if w.clock == nil {
		return time.Now()
	}
	return w.clock.Now()
}

// informerLag bounds how long a written status may take to show in the informer.
const informerLag = 10 * time.Second

// coalesceDelay lets a burst of bindings of one gang turn into one status write.
const coalesceDelay = 200 * time.Millisecond

// quorumGrace is how long a gang may lack part of its quorum, counted from its first member
// pod's creation, before its status says so: a pod creator makes a gang's pods together, and
// saying it in between would cost every gang a write. A PodGang none of whose pods exists yet
// gets no condition: the scheduler has nothing of it to place, and the pods' creator (the
// operator's PodClique status) is where their absence shows. Counting from the PodGang's own
// creation would cost a write for every gang created well before its pods (a burst of
// PodGangs, a slow pod creator), however soon its pods then arrive together.
const quorumGrace = 5 * time.Second

// waitingForPods reports whether the gang's status should say it waits for its pods.
func waitingForPods(g gangcache.Gang, now time.Time) bool {
	after, ok := waitingForPodsAfter(g, now)
	return ok && after == 0
}

// waitingForPodsAfter is how long after now the gang's missing quorum becomes worth a status
// write; ok is false when it does not (its quorum is present, or none of its pods exists).
func waitingForPodsAfter(g gangcache.Gang, now time.Time) (after time.Duration, ok bool) {
	if g.MembersSince.IsZero() || g.Quorum.Missing() == "" {
		return 0, false
	}
	return max(quorumGrace-now.Sub(g.MembersSince), 0), true
}

func newStatusWriter(gangs *gangcache.Shared, l *ledger.Ledger, nodes corelisters.NodeLister, recorder events.EventRecorder) *statusWriter {
	return &statusWriter{
		gangs: gangs, ledger: l, nodes: nodes, recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "grove-podgang-status"}),
	}
}

func (w *statusWriter) enqueue(key string) { w.queue.AddAfter(key, coalesceDelay) }

func (w *statusWriter) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for {
		key, quit := w.queue.Get()
		if quit {
			return
		}
		if err := w.sync(ctx, key); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Failed to update PodGang status", "podGang", key, "err", err)
			w.queue.AddRateLimited(key)
		} else {
			w.queue.Forget(key)
		}
		w.queue.Done(key)
	}
}

func podGangRef(pg *v1alpha1.PodGang) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGang",
		Namespace: pg.Namespace, Name: pg.Name, UID: pg.UID}
}

// event tells the user, once, why a gang cannot be placed.
func (w *statusWriter) event(key, reason string) {
	if w.recorder == nil {
		return
	}
	if g, ok := w.gangs.Get(key); ok {
		w.recorder.Eventf(podGangRef(g.PodGang), nil, v1.EventTypeWarning, common.EventReasonGangUnschedulable, "Scheduling", "%s", reason)
	}
}

// desiredStatus is what grove-scheduler owns in PodGang status.
type desiredStatus struct {
	phase          v1alpha1.PodGangPhase
	condition      *metav1.Condition
	placementScore *float64
	// placement is where the quorum is bound; nil when it is not.
	placement *v1alpha1.PodGangPlacement
}

func (w *statusWriter) desired(g gangcache.Gang) desiredStatus {
	pg := g.PodGang
	var bound, required int32
	running := true
	for _, gs := range g.Quorum {
		bound += min(gs.Bound, gs.Min)
		required += gs.Min
		running = running && g.Running[gs.Name] >= gs.Min
	}
	d := desiredStatus{phase: v1alpha1.PodGangPhasePending}
	cond := metav1.Condition{Type: v1alpha1.PodGangConditionScheduled, ObservedGeneration: pg.Generation}
	existing := apimeta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGangConditionScheduled)
	reason := w.ledger.Reason(gangcache.KeyOf(pg))
	switch {
	case g.Quorum.Bound():
		cond.Status, cond.Reason = metav1.ConditionTrue, common.ReasonSufficientScheduledPods
		cond.Message = fmt.Sprintf("%d of %d required pods are bound", bound, required)
		d.phase = v1alpha1.PodGangPhaseStarting
		if running {
			d.phase = v1alpha1.PodGangPhaseRunning
		}
		d.placementScore = w.placementScore(g)
		if w.gangs != nil {
			d.placement = lastPlacement(w.gangs.BoundNodes(gangcache.KeyOf(pg)))
		}
	case g.Quorum.Held():
		// The barrier has released the quorum and its bindings are in flight: the next thing
		// worth a write is "bound" (or, if a binding fails, the attempt's failure reason).
		return desiredStatus{}
	case waitingForPods(g, w.now()):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, common.ReasonWaitingForPods, g.Quorum.Missing()
	case reason != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, unschedulableReason(w.ledger.Cause(gangcache.KeyOf(pg))), reason
	case existing != nil || bound > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, common.ReasonInsufficientScheduledPods
		cond.Message = fmt.Sprintf("%d of %d required pods are bound", bound, required)
	default:
		// Not attempted yet: nothing to say.
		return desiredStatus{}
	}
	if len(cond.Message) > 32000 {
		cond.Message = cond.Message[:32000]
	}
	cond.LastTransitionTime = metav1.NewTime(time.Now())
	if existing != nil && existing.Status == cond.Status {
		cond.LastTransitionTime = existing.LastTransitionTime
	} else if cond.Status == metav1.ConditionTrue && w.gangs != nil {
		// Scheduled turns True when the quorum was bound, not when this writer got to it: a
		// write that lagged behind a preemption of the gang must not look like a placement after
		// it (disruptionOver).
		if at := w.gangs.ScheduledAt(gangcache.KeyOf(pg)); !at.IsZero() {
			cond.LastTransitionTime = metav1.NewTime(at)
		}
	}
	d.condition = &cond
	return d
}

// placementScore rates the locality of a placed gang by its narrowest gang-wide pack key: 1.0
// when every bound member shares one domain, 1/n across n domains. Gangs without a gang-wide
// key get none.
func (w *statusWriter) placementScore(g gangcache.Gang) *float64 {
	tc := g.PodGang.Spec.TopologyConstraint
	key := tc.Preferred()
	if key == "" {
		key = tc.Required()
	}
	if key == "" {
		return nil
	}
	domains := map[string]struct{}{}
	for _, nodeNames := range w.gangs.BoundNodes(gangcache.KeyOf(g.PodGang)) {
		for _, name := range nodeNames {
			node, err := w.nodes.Get(name)
			if err != nil {
				continue
			}
			domains[node.Labels[key]] = struct{}{}
		}
	}
	if len(domains) == 0 {
		return nil
	}
	score := 1 / float64(len(domains))
	return &score
}

func (w *statusWriter) sync(ctx context.Context, key string) error {
	g, ok := w.gangs.Get(key)
	if !ok {
		schedmetrics.SetWaiting(key, "")
		return nil
	}
	d := w.desired(g)
	observe(key, d, w.ledger.Cause(key))
	if d.condition == nil {
		if after, ok := waitingForPodsAfter(g, w.now()); ok && after > 0 {
			// Look again once the pods had time to appear.
			w.queue.AddAfter(key, after+coalesceDelay)
		}
		return nil
	}
	pg := g.PodGang
	if disruptionOver(pg, d.condition) {
		if err := w.clearDisruption(ctx, pg); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	existing := apimeta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGangConditionScheduled)
	current := desiredStatus{phase: pg.Status.Phase, condition: existing, placementScore: pg.Status.PlacementScore, placement: pg.Status.LastPlacement}
	last, wrote := w.gangs.Written(key)
	lastStatus, _ := last.Status.(desiredStatus)
	if current.equal(d) || wrote && lastStatus.equal(d) && time.Since(last.At) < informerLag {
		return nil
	}
	status := schedulerac.PodGangStatus().WithPhase(d.phase).WithConditions(groveclient.Condition(*d.condition))
	if d.placementScore != nil {
		status.WithPlacementScore(*d.placementScore)
	}
	// Every apply carries the last placement, the previous one while the quorum is not bound:
	// an apply without it would drop it, and it is most needed once the pods are gone.
	if p := d.placement; p != nil || pg.Status.LastPlacement != nil {
		if p == nil {
			p = pg.Status.LastPlacement
		}
		status.WithLastPlacement(schedulerac.PodGangPlacement().WithNodes(p.Nodes...))
	}
	err := w.gangs.ApplyStatus(ctx, schedulerac.PodGang(pg.Name, pg.Namespace).WithStatus(status), common.SchedulerFieldManager)
	if apierrors.IsNotFound(err) {
		w.gangs.SetWritten(key, gangcache.Written{})
		return nil
	}
	if err != nil {
		return err
	}
	// A placed gang gets no event of its own: kube-scheduler already tells each pod's binding,
	// and an event per gang would be one more API write per gang on the hot path.
	w.gangs.SetWritten(key, gangcache.Written{Status: d, At: time.Now()})
	observeWritten(g, d)
	return nil
}

func (d desiredStatus) equal(o desiredStatus) bool {
	if d.condition == nil || o.condition == nil {
		return d.condition == nil && o.condition == nil
	}
	// The placement alone is worth a write only when it was never recorded: it is written with
	// every change of the condition, and members bound beyond the quorum would cost a write each.
	if (d.placement == nil) != (o.placement == nil) && d.condition.Status == metav1.ConditionTrue {
		return false
	}
	return d.phase == o.phase && sameScore(d.placementScore, o.placementScore) &&
		d.condition.Status == o.condition.Status && d.condition.Reason == o.condition.Reason &&
		d.condition.Message == o.condition.Message && d.condition.ObservedGeneration == o.condition.ObservedGeneration
}

func sameScore(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// disruptionOver reports a preempted PodGang whose gang was placed again after the preemption:
// its DisruptionTarget condition (written by GangPreemption) is True from before the Scheduled
// condition last turned True.
func disruptionOver(pg *v1alpha1.PodGang, scheduled *metav1.Condition) bool {
	dt := apimeta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGangConditionDisruptionTarget)
	return dt != nil && dt.Status == metav1.ConditionTrue && scheduled != nil && scheduled.Status == metav1.ConditionTrue &&
		dt.LastTransitionTime.Before(&scheduled.LastTransitionTime)
}

// clearDisruption sets the DisruptionTarget condition False under the field manager that set it,
// so the Scheduled condition's writer never owns (and later drops) it.
func (w *statusWriter) clearDisruption(ctx context.Context, pg *v1alpha1.PodGang) error {
	cond := metav1.Condition{Type: v1alpha1.PodGangConditionDisruptionTarget, Status: metav1.ConditionFalse,
		Reason: common.ReasonRescheduledAfterPreemption, Message: "the gang was placed again after it was preempted",
		ObservedGeneration: pg.Generation, LastTransitionTime: metav1.Now()}
	return w.gangs.ApplyStatus(ctx, schedulerac.PodGang(pg.Name, pg.Namespace).
		WithStatus(schedulerac.PodGangStatus().WithConditions(groveclient.Condition(cond))), common.PreemptionFieldManager)
}

// unschedulableReason is the Scheduled condition's reason for a gang the ledger found
// unplaceable with cause (a ledger.Wait* constant): the cause as data, for kubectl grove why
// and anything else that must not read the message.
func unschedulableReason(cause string) string {
	switch cause {
	case ledger.WaitNoDomain:
		return common.ReasonNoDomainFits
	case ledger.WaitSpread:
		return common.ReasonReplicaSpreadUnsatisfiable
	case ledger.WaitSlice:
		return common.ReasonSliceUnsatisfiable
	case ledger.WaitFilterRejected:
		return common.ReasonFilterRejected
	case ledger.WaitReservedForOther:
		return common.ReasonReservedForOtherGang
	case ledger.WaitDRA:
		return common.ReasonDevicesUnavailable
	case ledger.WaitBinding:
		return common.ReasonAttemptFailed
	case ledger.WaitReuseRequired:
		return common.ReasonReservationReuseRequired
	case ledger.WaitRoleAffinity:
		return common.ReasonRoleAffinityUnsatisfiable
	}
	return common.ReasonUnschedulable
}

// lastPlacement is the sorted set of nodes of the bound members; nil without any.
func lastPlacement(bound map[string][]string) *v1alpha1.PodGangPlacement {
	names := sets.New[string]()
	for _, nodeNames := range bound {
		names.Insert(nodeNames...)
	}
	if names.Len() == 0 {
		return nil
	}
	return &v1alpha1.PodGangPlacement{Nodes: sets.List(names)}
}
