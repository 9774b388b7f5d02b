package clustertopology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func res(name string, o outcome, msg string) result {
	return result{outcome: o, status: corev1alpha1.SchedulerTopologyStatus{SchedulerName: name, Message: msg, InSync: o == inSync}}
}

func TestDriftConditionSummarisesTheBackends(t *testing.T) {
	cases := []struct {
		name        string
		results     []result
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{"no backends", nil, metav1.ConditionFalse, "NoTopologyAwareSchedulers",
			"no enabled scheduler backend has a topology object for this ClusterTopology"},
		{"all in sync", []result{res("kai-scheduler", inSync, ""), res("koord-scheduler", inSync, "")}, metav1.ConditionFalse, "SchedulerTopologiesInSync",
			"the topology objects of all topology-aware scheduler backends match"},
		{"one drifted", []result{res("kai-scheduler", inSync, ""), res("koord-scheduler", drifted, "keys differ")}, metav1.ConditionTrue,
			"SchedulerTopologyDrift", "koord-scheduler: keys differ"},
		{"drift beats unknown", []result{res("default-scheduler", unavailable, "not enabled"), res("kai-scheduler", drifted, "not found")},
			metav1.ConditionTrue, "SchedulerTopologyDrift", "kai-scheduler: not found"},
		{"drift and a failed sync", []result{res("a", drifted, "x"), res("b", syncFailed, "y")}, metav1.ConditionTrue, "SchedulerTopologyDrift", "a: x; b: y"},
		{"failed sync", []result{res("kai-scheduler", syncFailed, "not managed by Grove")}, metav1.ConditionTrue, "SchedulerTopologySyncFailed",
			"kai-scheduler: not managed by Grove"},
		{"unknown backend", []result{res("kai-scheduler", inSync, ""), res("volcano", unavailable, "not enabled")}, metav1.ConditionUnknown,
			"SchedulerBackendNotAvailable", "volcano: not enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := driftCondition(tc.results, 7)
			assert.Equal(t, metav1.Condition{Type: "SchedulerTopologyDrift", Status: tc.wantStatus, Reason: tc.wantReason, Message: tc.wantMessage,
				ObservedGeneration: 7}, c)
		})
	}
}
