package client

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// Condition is the apply configuration of a condition: what each PodGang status writer applies
// for the condition types it owns.
func Condition(c metav1.Condition) *metav1ac.ConditionApplyConfiguration {
	return metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithObservedGeneration(c.ObservedGeneration).
		WithLastTransitionTime(c.LastTransitionTime).WithReason(c.Reason).WithMessage(c.Message)
}
