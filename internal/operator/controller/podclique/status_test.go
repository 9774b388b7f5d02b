package podclique

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

type state int

const (
	gatedPod state = iota
	pendingPod
	scheduledStarting
	ready
	crashing
	terminating
	failed
	oldTemplate
)

func podIn(s state, i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i)), UID: types.UID(rune('a' + i)),
		Labels: map[string]string{apicommon.LabelPodTemplateHash: "h1"}}}
	switch s {
	case gatedPod:
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: apicommon.SchedulingGatePodGangPendingCreation}}
	case scheduledStarting:
		p.Spec.NodeName = "n"
	case ready:
		p.Spec.NodeName = "n"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	case crashing:
		p.Spec.NodeName = "n"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{LastTerminationState: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	case terminating:
		p.DeletionTimestamp = &metav1.Time{}
	case failed:
		p.Status.Phase = corev1.PodFailed
	case oldTemplate:
		p.Labels[apicommon.LabelPodTemplateHash] = "h0"
	}
	return p
}

func TestComputeStatus(t *testing.T) {
	cases := []struct {
		name                                          string
		pods                                          []state
		replicas, minAvailable                        int32
		wantLive, wantReady, wantScheduled, wantGated int32
		wantUpdated                                   int32
		wantScheduledCond, wantBreached               metav1.ConditionStatus
		wantBreachedReason                            string
		wantConverged                                 bool
	}{
		{"nothing scheduled yet", []state{gatedPod, gatedPod}, 2, 2, 2, 0, 0, 2, 2,
			metav1.ConditionFalse, metav1.ConditionFalse, apicommon.ReasonInsufficientScheduledPods, true},
		{"all ready", []state{ready, ready, ready}, 3, 2, 3, 3, 3, 0, 3,
			metav1.ConditionTrue, metav1.ConditionFalse, apicommon.ReasonSufficientReadyPods, true},
		{"starting pods are not a breach", []state{ready, scheduledStarting}, 2, 2, 2, 1, 2, 0, 2,
			metav1.ConditionTrue, metav1.ConditionFalse, apicommon.ReasonSufficientReadyPods, true},
		{"a crashing pod breaches minAvailable", []state{ready, crashing}, 2, 2, 2, 1, 2, 0, 2,
			metav1.ConditionTrue, metav1.ConditionTrue, apicommon.ReasonInsufficientReadyPods, true},
		{"terminating and failed pods do not count", []state{ready, terminating, failed}, 1, 1, 1, 1, 1, 0, 1,
			metav1.ConditionTrue, metav1.ConditionFalse, apicommon.ReasonSufficientReadyPods, true},
		{"an old-template pod is not updated", []state{pendingPod, oldTemplate}, 2, 1, 2, 0, 0, 0, 1,
			metav1.ConditionFalse, metav1.ConditionFalse, apicommon.ReasonInsufficientScheduledPods, false},
		{"missing pods: not converged", []state{pendingPod}, 2, 1, 1, 0, 0, 0, 1,
			metav1.ConditionFalse, metav1.ConditionFalse, apicommon.ReasonInsufficientScheduledPods, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := &corev1alpha1.PodClique{
				ObjectMeta: metav1.ObjectMeta{Name: "p-0-a", Generation: 3, Labels: map[string]string{
					apicommon.LabelPartOfKey: "p", apicommon.LabelPodTemplateHash: "h1", apicommon.LabelPodCliqueSetGenerationHash: "g1"}},
				Spec: corev1alpha1.PodCliqueSpec{Replicas: tc.replicas, MinAvailable: ptr.To(tc.minAvailable)},
			}
			var pods []*corev1.Pod
			for i, s := range tc.pods {
				pods = append(pods, podIn(s, i))
			}
			st := computeStatus(pclq, pods)
			assert.Equal(t, []int32{tc.wantLive, tc.wantReady, tc.wantScheduled, tc.wantGated, tc.wantUpdated},
				[]int32{st.Replicas, st.ReadyReplicas, st.ScheduledReplicas, st.ScheduleGatedReplicas, st.UpdatedReplicas},
				"replicas, ready, scheduled, gated, updated")
			sc := findCondition(st.Conditions, apicommon.ConditionPodCliqueScheduled)
			br := findCondition(st.Conditions, apicommon.ConditionMinAvailableBreached)
			assert.Equal(t, tc.wantScheduledCond, sc.Status)
			assert.Equal(t, tc.wantBreached, br.Status)
			assert.Equal(t, tc.wantBreachedReason, br.Reason)
			assert.EqualValues(t, 3, br.ObservedGeneration)
			assert.Equal(t, "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=p,grove.io/podclique=p-0-a", *st.Selector)
			if tc.wantConverged {
				assert.Equal(t, "h1", ptr.Deref(st.CurrentPodTemplateHash, ""))
				assert.Equal(t, "g1", ptr.Deref(st.CurrentPodCliqueSetGenerationHash, ""))
			} else {
				assert.Nil(t, st.CurrentPodTemplateHash)
			}
		})
	}
}

func TestComputeStatusKeepsTransitionTimeWhenNothingChanges(t *testing.T) {
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "p-0-a"}, Spec: corev1alpha1.PodCliqueSpec{Replicas: 1}}
	pods := []*corev1.Pod{podIn(ready, 0)}
	pclq.Status = computeStatus(pclq, pods)
	again := computeStatus(pclq, pods)
	assert.Equal(t, pclq.Status, again, "a second computation over the same pods changes nothing, so nothing is written")
}

func findCondition(conds []metav1.Condition, t string) metav1.Condition {
	for _, c := range conds {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

// TestBreachNeedsAPlacedClique: losing scheduled pods breaches minAvailable only in a clique
// that had been placed (the condition remembers it); a clique never placed, or scaled below
// minAvailable, is not breached.
func TestBreachNeedsAPlacedClique(t *testing.T) {
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "p-0-a"},
		Spec: corev1alpha1.PodCliqueSpec{Replicas: 2, MinAvailable: ptr.To[int32](2)}}
	breach := func() metav1.Condition {
		return findCondition(pclq.Status.Conditions, apicommon.ConditionMinAvailableBreached)
	}
	pclq.Status = computeStatus(pclq, []*corev1.Pod{podIn(ready, 0), podIn(pendingPod, 1)})
	assert.Equal(t, metav1.ConditionFalse, breach().Status, "never placed")

	pclq.Status = computeStatus(pclq, []*corev1.Pod{podIn(ready, 0), podIn(ready, 1)})
	assert.Equal(t, metav1.ConditionFalse, breach().Status, "placed and available")

	pclq.Status = computeStatus(pclq, []*corev1.Pod{podIn(ready, 0), podIn(pendingPod, 2)})
	assert.Equal(t, metav1.ConditionTrue, breach().Status, "a placed clique lost a scheduled pod")
	assert.Equal(t, apicommon.ReasonInsufficientScheduledPods, breach().Reason)

	pclq.Status = computeStatus(pclq, []*corev1.Pod{podIn(pendingPod, 1), podIn(pendingPod, 2)})
	assert.Equal(t, metav1.ConditionTrue, breach().Status, "stays breached while it has fewer")

	pclq.Status = computeStatus(pclq, []*corev1.Pod{podIn(ready, 0), podIn(scheduledStarting, 2)})
	assert.Equal(t, metav1.ConditionFalse, breach().Status, "healed")

	pclq.Spec.Replicas = 0
	pclq.Status = computeStatus(pclq, nil)
	assert.Equal(t, metav1.ConditionFalse, breach().Status, "scaled to zero on purpose")
}
