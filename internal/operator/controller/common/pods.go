package common

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

// IsTerminating reports whether the object is being deleted.
func IsTerminating(obj client.Object) bool { return obj.GetDeletionTimestamp() != nil }

// IsActive reports whether the pod counts towards its PodClique's replicas: not being deleted
// and not finished (an evicted or completed pod is replaced).
func IsActive(pod *corev1.Pod) bool {
	return !IsTerminating(pod) && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded
}

// IsScheduled reports whether the pod is bound to a node.
func IsScheduled(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// HasPodGangGate reports whether the pod still waits for its PodGang.
func HasPodGangGate(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == apicommon.SchedulingGatePodGangPendingCreation
	})
}

// IsFailing reports whether a scheduled pod that is not ready has shown it will not become
// ready by itself: a container exited with an error, or every container started and the pod
// is still not ready. A pod still pulling images or running init containers is not failing.
func IsFailing(pod *corev1.Pod) bool {
	if !IsScheduled(pod) || IsReady(pod) {
		return false
	}
	statuses := pod.Status.ContainerStatuses
	started := len(statuses) > 0
	for _, s := range statuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return true
		}
		if t := s.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
			return true
		}
		if s.Started == nil || !*s.Started {
			started = false
		}
	}
	return started
}
