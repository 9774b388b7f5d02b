// Package metrics holds grove-scheduler's own metrics, registered with kube-scheduler's
// registry (served on its secure /metrics next to scheduler_*). The plugins feed them through
// one-line hooks; label values are bounded (reasons, node label keys), never gang or pod names.
package metrics

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// Reasons a gang waits (label "reason" of grove_scheduler_gangs_waiting): a quorum not
// present yet, or the cause the gang plugin recorded with an unplaceable gang's reason.
const (
	ReasonQuorumMissing    = "quorum_missing"
	ReasonNoRoom           = ledger.WaitNoRoom
	ReasonNoDomain         = ledger.WaitNoDomain
	ReasonSpread           = ledger.WaitSpread
	ReasonSlice            = ledger.WaitSlice
	ReasonFilterRejected   = ledger.WaitFilterRejected
	ReasonDRA              = ledger.WaitDRA
	ReasonReservedForOther = ledger.WaitReservedForOther
	ReasonBinding          = ledger.WaitBinding
	ReasonReuseRequired    = ledger.WaitReuseRequired
	ReasonRoleAffinity     = ledger.WaitRoleAffinity
)

var (
	gangsWaiting = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "grove_scheduler_gangs_waiting", Help: "PodGangs whose quorum is not bound, by why: quorum_missing, no_room, no_domain, spread, filter_rejected, dra, reserved_for_other, binding, reuse_required, role_affinity.",
		StabilityLevel: metrics.ALPHA}, []string{"reason"})
	quorumBound = metrics.NewHistogram(&metrics.HistogramOpts{
		Name: "grove_scheduler_quorum_bound_duration_seconds", Help: "Time from a PodGang's first pod to its quorum being bound.",
		Buckets: metrics.ExponentialBuckets(0.1, 2, 14), StabilityLevel: metrics.ALPHA})
	gangsPlaced = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "grove_scheduler_gangs_placed_total", Help: "PodGangs whose quorum was bound, by their narrowest gang-wide pack key (node label; \"none\" without one) and whether all members share one value of it.",
		StabilityLevel: metrics.ALPHA}, []string{"pack_key", "packed"})
	placementScore = metrics.NewHistogram(&metrics.HistogramOpts{
		Name: "grove_scheduler_placement_score", Help: "Placement score of placed PodGangs with a pack key (1: one domain; 1/n across n domains).",
		Buckets: []float64{0.1, 0.25, 0.34, 0.5, 0.75, 0.99, 1}, StabilityLevel: metrics.ALPHA})
	permitWaits = metrics.NewCounter(&metrics.CounterOpts{
		Name: "grove_scheduler_permit_waits_total", Help: "Gang members held at the Permit barrier to wait for the rest of their quorum.",
		StabilityLevel: metrics.ALPHA})
	attemptsAbandoned = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "grove_scheduler_gang_attempts_abandoned_total", Help: "Gang placement attempts given up after members waited at Permit, by cause: permit_timeout, member_lost (rejected or binding failed), no_node (the quorum can no longer be reached); none of the gang is bound.",
		StabilityLevel: metrics.ALPHA}, []string{"cause"})
	preemptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "grove_scheduler_preemptions_total", Help: "Preemption attempts of GangPreemption, by preemptor (gang, pod) and outcome: evicting (whole victims chosen), not_needed (the room is there or being freed), not_enough (evicting every lower-priority workload would not make it fit), refused (not eligible, or the freed node would still not take it).",
		StabilityLevel: metrics.ALPHA}, []string{"preemptor", "outcome"})
	memberPlans = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "grove_scheduler_member_plans_total", Help: "Gang members a plan named a node for, by outcome: handed_out (the member was narrowed to its planned node), stale (the node lost its room before the member's turn), refused (the filters refused the planned node; the member went over its domain again).",
		StabilityLevel: metrics.ALPHA}, []string{"outcome"})
	reservationsActive = metrics.NewGauge(&metrics.GaugeOpts{
		Name: "grove_scheduler_reservations_active", Help: "Node reservations held for a starving PodGang (0 or 1).",
		StabilityLevel: metrics.ALPHA})
)

var register sync.Once

// Register adds the metrics to kube-scheduler's registry (once, however many profiles run the
// plugins).
func Register() {
	register.Do(func() {
		legacyregistry.MustRegister(gangsWaiting, quorumBound, gangsPlaced, placementScore, permitWaits, attemptsAbandoned, preemptions, memberPlans, reservationsActive)
		// Every series a dashboard panel sums exists from the start, at 0.
		for _, c := range []string{ledger.CausePermitTimeout, ledger.CauseMemberLost, ledger.CauseNoNode} {
			attemptsAbandoned.WithLabelValues(c)
		}
		for _, who := range []string{PreemptorGang, PreemptorPod} {
			for _, o := range []string{PreemptionEvicting, PreemptionNotNeeded, PreemptionNotEnough, PreemptionRefused} {
				preemptions.WithLabelValues(who, o)
			}
		}
		for _, o := range []string{PlanHandedOut, PlanStale, PlanRefused} {
			memberPlans.WithLabelValues(o)
		}
		for _, r := range []string{ReasonQuorumMissing, ReasonNoRoom, ReasonNoDomain, ReasonSpread, ReasonSlice, ReasonFilterRejected, ReasonDRA, ReasonReservedForOther, ReasonBinding, ReasonReuseRequired, ReasonRoleAffinity} {
			gangsWaiting.WithLabelValues(r).Set(0)
		}
	})
}

// waiting remembers each gang's reason so the gauge can move it between reasons.
var waiting = struct {
	sync.Mutex
	byKey map[string]string
}{byKey: map[string]string{}}

// SetWaiting records why a gang waits; reason "" means it no longer does (placed or gone).
func SetWaiting(key, reason string) {
	waiting.Lock()
	defer waiting.Unlock()
	prev, ok := waiting.byKey[key]
	if prev == reason && (ok || reason == "") {
		return
	}
	if ok {
		gangsWaiting.WithLabelValues(prev).Dec()
		delete(waiting.byKey, key)
	}
	if reason != "" {
		gangsWaiting.WithLabelValues(reason).Inc()
		waiting.byKey[key] = reason
	}
}

// ObservePlaced records a gang whose quorum was just bound.
func ObservePlaced(firstPod time.Time, packKey string, score *float64) {
	if !firstPod.IsZero() {
		quorumBound.Observe(time.Since(firstPod).Seconds())
	}
	if packKey == "" {
		packKey = "none"
	}
	packed := "false"
	if score != nil {
		placementScore.Observe(*score)
		if *score >= 1 {
			packed = "true"
		}
	} else if packKey == "none" {
		packed = "true"
	}
	gangsPlaced.WithLabelValues(packKey, packed).Inc()
}

// PermitWait counts a member held at the Permit barrier.
func PermitWait() { permitWaits.Inc() }

// AttemptAbandoned counts a gang attempt given up, by its ledger.Failure cause.
func AttemptAbandoned(cause string) { attemptsAbandoned.WithLabelValues(cause).Inc() }

// Labels of grove_scheduler_preemptions_total.
const (
	PreemptorGang       = "gang"
	PreemptorPod        = "pod"
	PreemptionEvicting  = "evicting"
	PreemptionNotNeeded = "not_needed"
	PreemptionNotEnough = "not_enough"
	PreemptionRefused   = "refused"
)

// Preemption counts one preemption attempt's outcome.
func Preemption(preemptor, outcome string) { preemptions.WithLabelValues(preemptor, outcome).Inc() }

// Labels of grove_scheduler_member_plans_total.
const (
	PlanHandedOut = "handed_out"
	PlanStale     = "stale"
	PlanRefused   = "refused"
)

// MemberPlan counts what became of one member's planned node. Many stale or refused plans
// mean planning costs Filter calls without saving them.
func MemberPlan(outcome string) { memberPlans.WithLabelValues(outcome).Inc() }

// SetReservation reports whether a reservation is held.
func SetReservation(held bool) {
	if held {
		reservationsActive.Set(1)
	} else {
		reservationsActive.Set(0)
	}
}
