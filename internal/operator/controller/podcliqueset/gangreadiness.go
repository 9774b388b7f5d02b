package podcliqueset

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	groveclient "github.com/ai-dynamo/grove/pkg/client"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// gangReadiness writes upstream Grove's PodGang Ready condition, status.lastScheduled and
// status.lastReady. The operator owns all three, whatever the scheduler backend (KAI,
// Koordinator and default-scheduler write no PodGang status): they are read off the gang's
// pods, as Unhealthy is. lastScheduled is when the current pods reached minReplicas bound in
// every PodGroup (the minReplicas-th bind of each group, the latest over the groups), lastReady
// likewise with their Ready transitions; both only move forward, so a gang placed or ready
// again after losing it advances them and nothing clears them. They survive operator restarts
// because they come from the pods.
type gangReadiness struct{ r *Reconciler }

func (*gangReadiness) Name() string { return "podgang-readiness" }

func (*gangReadiness) Delete(context.Context, *state) error { return nil }

func (c *gangReadiness) Sync(ctx context.Context, st *state) error {
	owned, err := st.children.ownedPodGangs(ctx, st.stored)
	if err != nil || len(owned) == 0 {
		return err
	}
	pods, err := st.children.pods(ctx)
	if err != nil {
		return err
	}
	members := map[string][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if common.IsActive(p) {
			members[p.Labels[apicommon.LabelPodGang]] = append(members[p.Labels[apicommon.LabelPodGang]], p)
		}
	}
	type write struct {
		pg   *schedv1alpha1.PodGang
		want gangReadinessState
	}
	var writes []write
	for _, pg := range owned {
		if common.IsTerminating(pg) {
			continue
		}
		want := observeGangReadiness(pg, members[pg.Name])
		switch want.due(pg) {
		case notDue:
			continue
		case generationOnly:
			if wait := c.putOff(pg); wait > 0 {
				st.requeueAfter(wait)
				continue
			}
		}
		c.r.generationSince.Delete(pg.UID)
		writes = append(writes, write{pg, want})
	}
	if len(writes) == 0 {
		return nil
	}
	st.children.wrote(childPodGangs)
	// In slow-start batches: when many gangs are due at once (a change that reaches every gang,
	// an operator that starts on a running PodCliqueSet), the Ready conditions written one after
	// another held this reconcile, and the status write after it, for a round trip per gang.
	errs := make([]error, len(writes))
	_, _ = common.SlowStart(ctx, len(writes), func(ctx context.Context, i int) error {
		errs[i] = applyGangReadiness(ctx, c.r.Client, writes[i].pg, writes[i].want)
		return nil
	})
	return errors.Join(errs...)
}

// gangReadinessState is what the operator writes of one PodGang.
type gangReadinessState struct {
	ready                    metav1.Condition
	lastScheduled, lastReady *metav1.Time
}

// readinessDue is whether, and why, a PodGang's readiness is written.
type readinessDue int

const (
	notDue readinessDue = iota
	// generationOnly: the stored condition is right but was computed for an older generation.
	generationOnly
	due
)

// due reports whether the PodGang's stored status differs from w. A gang never scheduled and
// without a Ready condition yet is left alone: Ready=False would say nothing the missing
// condition does not, and each gang would cost one more status write while it is placed (the
// first write comes with lastScheduled).
func (w gangReadinessState) due(pg *schedv1alpha1.PodGang) readinessDue {
	c := meta.FindStatusCondition(pg.Status.Conditions, schedv1alpha1.PodGangConditionReady)
	switch {
	case c == nil && w.lastScheduled == nil && w.ready.Status == metav1.ConditionFalse:
		return notDue
	case c == nil || c.Status != w.ready.Status || c.Reason != w.ready.Reason || c.Message != w.ready.Message ||
		!equalTime(pg.Status.LastScheduled, w.lastScheduled) || !equalTime(pg.Status.LastReady, w.lastReady):
		return due
	case c.ObservedGeneration != pg.Generation:
		return generationOnly
	}
	return notDue
}

// generationGrace is how long a Ready condition that only needs its observedGeneration advanced
// waits for a change that is written anyway. An update's pod-list patch of a replaced gang
// changes its generation while the gang is still down (Ready False, its replacements not yet
// placed): written at once, that was a status write of its own per gang replaced, followed
// within a second by the one that comes with lastScheduled. A gang whose replacements are never
// placed has its observedGeneration written when the grace runs out.
const generationGrace = 10 * time.Second

// putOff reports how much longer the PodGang's generation-only readiness write may wait, from
// the first pass that put it off (generations that follow do not restart the grace); 0: write
// it now.
func (c *gangReadiness) putOff(pg *schedv1alpha1.PodGang) time.Duration {
	now := c.r.now()
	since, _ := c.r.generationSince.LoadOrStore(pg.UID, now)
	return max(0, since.(time.Time).Add(generationGrace).Sub(now))
}

func equalTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Truncate(time.Second).Equal(b.Time.Truncate(time.Second))
}

// observeGangReadiness derives the Ready condition and the two timestamps from the gang's pods.
func observeGangReadiness(pg *schedv1alpha1.PodGang, pods []*corev1.Pod) gangReadinessState {
	byGroup := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byGroup[p.Labels[apicommon.LabelPodClique]] = append(byGroup[p.Labels[apicommon.LabelPodClique]], p)
	}
	var scheduledAt, readyAt time.Time
	scheduled, ready := len(pg.Spec.PodGroups) > 0, len(pg.Spec.PodGroups) > 0
	var short []string
	for _, g := range pg.Spec.PodGroups {
		var bound, readyTimes []time.Time
		for _, p := range byGroup[g.Name] {
			if common.IsScheduled(p) {
				bound = append(bound, boundAt(p))
			}
			if common.IsReady(p) {
				readyTimes = append(readyTimes, readySince(p))
			}
		}
		at, ok := quorumAt(bound, g.MinReplicas)
		scheduled = scheduled && ok
		if ok && at.After(scheduledAt) {
			scheduledAt = at
		}
		at, ok = quorumAt(readyTimes, g.MinReplicas)
		ready = ready && ok
		if ok && at.After(readyAt) {
			readyAt = at
		}
		if !ok {
			// Names only: a count in the message would make every pod that turns Ready a
			// status write of its gang.
			short = append(short, g.Name)
		}
	}
	w := gangReadinessState{lastScheduled: pg.Status.LastScheduled, lastReady: pg.Status.LastReady}
	advance := func(stored *metav1.Time, at time.Time) *metav1.Time {
		if stored == nil || at.After(stored.Time.Add(time.Second)) {
			t := metav1.NewTime(at.Truncate(time.Second))
			return &t
		}
		return stored
	}
	if scheduled {
		w.lastScheduled = advance(w.lastScheduled, scheduledAt)
	}
	w.ready = metav1.Condition{Type: schedv1alpha1.PodGangConditionReady, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonInsufficientReadyPods, Message: "PodGroups below minReplicas ready: " + strings.Join(short, ", ")}
	if ready {
		w.lastReady = advance(w.lastReady, readyAt)
		w.ready = metav1.Condition{Type: schedv1alpha1.PodGangConditionReady, Status: metav1.ConditionTrue,
			Reason: apicommon.ReasonSufficientReadyPods, Message: "every PodGroup has minReplicas ready pods", LastTransitionTime: *w.lastReady}
	}
	return w
}

// quorumAt is when the n-th earliest of times happened, if there are n.
func quorumAt(times []time.Time, n int32) (time.Time, bool) {
	if int32(len(times)) < n {
		return time.Time{}, false
	}
	if n <= 0 {
		return time.Time{}, true
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[n-1], true
}

// applyGangReadiness applies the Ready condition and the timestamps under the operator's
// readiness field manager, leaving every other writer's entries alone.
func applyGangReadiness(ctx context.Context, c client.Client, pg *schedv1alpha1.PodGang, w gangReadinessState) error {
	cond := w.ready
	if old := meta.FindStatusCondition(pg.Status.Conditions, cond.Type); cond.LastTransitionTime.IsZero() {
		cond.LastTransitionTime = metav1.Now()
		if old != nil && old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	cond.ObservedGeneration = pg.Generation
	status := schedulerac.PodGangStatus().WithConditions(groveclient.Condition(cond))
	if w.lastScheduled != nil {
		status.WithLastScheduled(*w.lastScheduled)
	}
	if w.lastReady != nil {
		status.WithLastReady(*w.lastReady)
	}
	err := c.Status().Apply(ctx, schedulerac.PodGang(pg.Name, pg.Namespace).WithStatus(status),
		client.FieldOwner(apicommon.PodGangReadinessFieldManager), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}
