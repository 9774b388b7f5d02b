// Package metrics holds grove-operator's own Prometheus metrics, registered with
// controller-runtime's registry (served on the manager's /metrics next to its defaults).
// Counters are bumped by one-line hooks in the controllers; the state gauges are computed from
// the manager's cache at scrape time, so they cannot drift from what the API holds.
package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ai-dynamo/grove/internal/operator/controller/component"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Counters and histograms the controllers feed. Labels are bounded: controller and kind names,
// never object names.
var (
	PodsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "grove_operator_pods_created_total", Help: "Pods grove-operator created for PodCliques."})
	PodsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_operator_pods_deleted_total", Help: "Pods grove-operator deleted, by reason (scale_in, update, clique_deleted: the PodClique was deleted, e.g. by a gang termination; node_failure, node_failure_forced: the pod's node failed)."},
		[]string{"reason"})
	GatesLifted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "grove_operator_scheduling_gates_lifted_total", Help: "Pods whose PodGang scheduling gate grove-operator removed."})
	GatedSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "grove_operator_pod_gated_duration_seconds", Help: "Time from a pod's creation to the removal of its PodGang scheduling gate.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)})
	GangTerminations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_operator_gang_terminations_total", Help: "Gang terminations: PodCliqueSet replicas and scaling-group replicas recreated after staying below minAvailable.",
	}, []string{"scope"})
	MemberReplacements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_operator_member_replacements_total", Help: "Replacements of the pods a failed node took from a PodCliqueSet replica, by nodeFailurePolicy (ReplaceInDomain: the node's pods; RecreateGang: the whole replica).",
	}, []string{"policy"})
	MemberReplacementSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "grove_operator_member_replacement_duration_seconds", Help: "Time from a node's failure (its Ready condition leaving True) to the replica that lost pods on it having every pod ready again.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14)})
	ReconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_operator_reconcile_errors_total", Help: "Failed reconciles of Grove's controllers, by controller and failing component."},
		[]string{"controller", "component"})
)

// Values of the labels above.
const (
	DeleteScaleIn       = "scale_in"
	DeleteUpdate        = "update"
	DeleteCliqueDeleted = "clique_deleted"
	// DeleteNodeFailure: the pod's node failed; DeleteNodeFailureForced: it was force-deleted
	// (grace period 0) because the node is gone or unreachable.
	DeleteNodeFailure       = "node_failure"
	DeleteNodeFailureForced = "node_failure_forced"
	ScopeReplica            = "podcliqueset_replica"
	ScopeScalingGroup       = "scaling_group_replica"
)

// ObserveReconcileError counts a failed reconcile of controller, labelled with the component
// that failed (for the PodCliqueSet controller's components) or "reconcile".
func ObserveReconcileError(controller string, err error) {
	if err == nil {
		return
	}
	name := "reconcile"
	var ce *component.Error
	if errors.As(err, &ce) {
		name = ce.Component
	}
	ReconcileErrors.WithLabelValues(controller, name).Inc()
}

// ObserveGateLifted records one pod's gate removal.
func ObserveGateLifted(created time.Time) {
	GatesLifted.Inc()
	if !created.IsZero() {
		GatedSeconds.Observe(time.Since(created).Seconds())
	}
}

var (
	pcsDesc = prometheus.NewDesc("grove_podcliquesets", "PodCliqueSets by their Ready condition (true, false, unknown).",
		[]string{"ready"}, nil)
	replicasDesc = prometheus.NewDesc("grove_podcliqueset_replicas", "PodCliqueSet replicas by state: available, unavailable (wanted but not available).",
		[]string{"state"}, nil)
	updatingDesc = prometheus.NewDesc("grove_podcliqueset_rolling_update_replicas", "Replicas of PodCliqueSets under a rolling update, by state: updated, pending (not yet on the new template).",
		[]string{"state"}, nil)
	unavailablePodsDesc = prometheus.NewDesc("grove_podcliqueset_rolling_update_unavailable_pods",
		"Pods of PodCliqueSets under a rolling update that are missing or not ready (PodClique spec.replicas less readyReplicas): what the update's maxUnavailable budgets bound.",
		nil, nil)
	gangsDesc = prometheus.NewDesc("grove_podgangs", "PodGangs by phase (Pending, Starting, Running) and Scheduled condition (true, false, unknown).",
		[]string{"phase", "scheduled"}, nil)
)

// stateCollector reports the state gauges from a cache at scrape time.
type stateCollector struct{ c client.Reader }

func (s stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pcsDesc
	ch <- replicasDesc
	ch <- updatingDesc
	ch <- unavailablePodsDesc
	ch <- gangsDesc
}

func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var pcss corev1alpha1.PodCliqueSetList
	if err := s.c.List(ctx, &pcss); err == nil {
		ready := map[string]float64{"true": 0, "false": 0, "unknown": 0}
		var available, unavailable, updated, pending float64
		for i := range pcss.Items {
			p := &pcss.Items[i]
			ready[conditionValue(apimeta.FindStatusCondition(p.Status.Conditions, apicommon.ConditionReady))]++
			a := min(p.Status.AvailableReplicas, p.Spec.Replicas)
			available += float64(a)
			unavailable += float64(p.Spec.Replicas - a)
			if up := p.Status.UpdateProgress; up != nil && up.UpdateEndedAt == nil {
				u := min(p.Status.UpdatedReplicas, p.Spec.Replicas)
				updated += float64(u)
				pending += float64(p.Spec.Replicas - u)
			}
		}
		for v, n := range ready {
			ch <- prometheus.MustNewConstMetric(pcsDesc, prometheus.GaugeValue, n, v)
		}
		ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, available, "available")
		ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, unavailable, "unavailable")
		ch <- prometheus.MustNewConstMetric(updatingDesc, prometheus.GaugeValue, updated, "updated")
		ch <- prometheus.MustNewConstMetric(updatingDesc, prometheus.GaugeValue, pending, "pending")
		ch <- prometheus.MustNewConstMetric(unavailablePodsDesc, prometheus.GaugeValue, s.unavailableDuringUpdate(ctx, pcss.Items))
	}
	var gangs schedv1alpha1.PodGangList
	if err := s.c.List(ctx, &gangs); err == nil {
		counts := map[[2]string]float64{}
		for _, phase := range []schedv1alpha1.PodGangPhase{schedv1alpha1.PodGangPhasePending, schedv1alpha1.PodGangPhaseStarting, schedv1alpha1.PodGangPhaseRunning} {
			for _, sched := range []string{"true", "false", "unknown"} {
				counts[[2]string{string(phase), sched}] = 0
			}
		}
		for i := range gangs.Items {
			g := &gangs.Items[i]
			phase := g.Status.Phase
			if phase == "" {
				phase = schedv1alpha1.PodGangPhasePending
			}
			counts[[2]string{string(phase), conditionValue(apimeta.FindStatusCondition(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled))}]++
		}
		for k, n := range counts {
			ch <- prometheus.MustNewConstMetric(gangsDesc, prometheus.GaugeValue, n, k[0], k[1])
		}
	}
}

// unavailableDuringUpdate counts the missing or unready pods of the PodCliques of
// PodCliqueSets whose update is under way.
func (s stateCollector) unavailableDuringUpdate(ctx context.Context, pcss []corev1alpha1.PodCliqueSet) float64 {
	updating := map[[2]string]bool{}
	for i := range pcss {
		if up := pcss[i].Status.UpdateProgress; up != nil && up.UpdateEndedAt == nil {
			updating[[2]string{pcss[i].Namespace, pcss[i].Name}] = true
		}
	}
	if len(updating) == 0 {
		return 0
	}
	var pclqs corev1alpha1.PodCliqueList
	if err := s.c.List(ctx, &pclqs); err != nil {
		return 0
	}
	var n float64
	for i := range pclqs.Items {
		p := &pclqs.Items[i]
		if updating[[2]string{p.Namespace, p.Labels[apicommon.LabelPartOfKey]}] && p.DeletionTimestamp == nil {
			n += float64(max(0, p.Spec.Replicas-p.Status.ReadyReplicas))
		}
	}
	return n
}

// conditionValue is a condition's status as a label value.
func conditionValue(c *metav1.Condition) string {
	switch {
	case c == nil:
		return "unknown"
	case c.Status == metav1.ConditionTrue:
		return "true"
	case c.Status == metav1.ConditionFalse:
		return "false"
	}
	return "unknown"
}

// Register adds grove-operator's metrics to controller-runtime's registry; the state gauges
// read through c (the manager's cache).
func Register(c client.Reader) error {
	// Every series a dashboard panel sums exists from the start, at 0.
	for _, r := range []string{DeleteScaleIn, DeleteUpdate, DeleteCliqueDeleted, DeleteNodeFailure, DeleteNodeFailureForced} {
		PodsDeleted.WithLabelValues(r)
	}
	for _, sc := range []string{ScopeReplica, ScopeScalingGroup} {
		GangTerminations.WithLabelValues(sc)
	}
	for _, p := range []corev1alpha1.NodeFailurePolicy{corev1alpha1.NodeFailurePolicyReplaceInDomain, corev1alpha1.NodeFailurePolicyRecreateGang} {
		MemberReplacements.WithLabelValues(string(p))
	}
	for _, c := range []string{"podcliqueset", "podclique"} {
		ReconcileErrors.WithLabelValues(c, "reconcile")
	}
	for _, st := range []corev1alpha1.UpdateStrategyType{corev1alpha1.RollingRecreateStrategy, corev1alpha1.CoherentStrategy, corev1alpha1.OnDeleteStrategy} {
		RollingUpdateSeconds.WithLabelValues(string(st))
	}
	for _, col := range []prometheus.Collector{PodsCreated, PodsDeleted, GatesLifted, GatedSeconds, GangTerminations, MemberReplacements, MemberReplacementSeconds, ReconcileErrors, RollingUpdateSeconds, StartupWaitSeconds, stateCollector{c}} {
		if err := ctrlmetrics.Registry.Register(col); err != nil {
			if _, dup := err.(prometheus.AlreadyRegisteredError); !dup {
				return err
			}
		}
	}
	return nil
}
