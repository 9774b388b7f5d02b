package gang

import (
	"cmp"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
)

// observe feeds why the gang waits to the metrics: the status the writer wants, and for an
// unplaceable gang the cause the ledger recorded with its reason (never the reason's words).
func observe(key string, d desiredStatus, cause string) {
	if d.condition == nil {
		return
	}
	if d.condition.Status == metav1.ConditionTrue {
		schedmetrics.SetWaiting(key, "")
		return
	}
	switch {
	case d.condition.Reason == common.ReasonWaitingForPods:
		schedmetrics.SetWaiting(key, schedmetrics.ReasonQuorumMissing)
	case common.IsUnschedulable(d.condition.Reason):
		schedmetrics.SetWaiting(key, cmp.Or(cause, schedmetrics.ReasonNoRoom))
	default:
		schedmetrics.SetWaiting(key, schedmetrics.ReasonBinding)
	}
}

// observeWritten feeds a written status to the metrics: on the transition to bound, how long
// the quorum took and where it landed.
func observeWritten(g gangcache.Gang, d desiredStatus) {
	if d.condition == nil || d.condition.Status != metav1.ConditionTrue ||
		apimeta.IsStatusConditionTrue(g.PodGang.Status.Conditions, v1alpha1.PodGangConditionScheduled) {
		return
	}
	tc := g.PodGang.Spec.TopologyConstraint
	packKey := tc.Preferred()
	if packKey == "" {
		packKey = tc.Required()
	}
	schedmetrics.ObservePlaced(g.MembersSince, packKey, d.placementScore)
}
