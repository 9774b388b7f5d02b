package podcliquescalinggroup

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// member is a PodClique of group replica j with minAvailable 2 and the given pod counts.
func member(j int, clique string, scheduled, ready int32, generation string) *corev1alpha1.PodClique {
	p := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "p-0-g-" + strconv.Itoa(j) + "-" + clique,
		Labels: map[string]string{apicommon.LabelPodCliqueScalingGroupReplicaIndex: strconv.Itoa(j)}},
		Spec: corev1alpha1.PodCliqueSpec{Replicas: 2, MinAvailable: ptr.To[int32](2)}}
	p.Status.ScheduledReplicas, p.Status.ReadyReplicas = scheduled, ready
	if generation != "" {
		p.Status.CurrentPodCliqueSetGenerationHash = ptr.To(generation)
	}
	return p
}

func TestComputeStatus(t *testing.T) {
	cases := []struct {
		name                                                    string
		members                                                 []*corev1alpha1.PodClique
		wantReplicas, wantScheduled, wantAvailable, wantUpdated int32
		wantBreached                                            metav1.ConditionStatus
		wantReason                                              string
	}{
		{"nothing scheduled", []*corev1alpha1.PodClique{member(0, "a", 0, 0, ""), member(0, "b", 0, 0, ""), member(1, "a", 0, 0, ""), member(1, "b", 0, 0, "")},
			2, 0, 0, 0, metav1.ConditionFalse, apicommon.ReasonInsufficientScheduledReplicas},
		{"one replica available", []*corev1alpha1.PodClique{member(0, "a", 2, 2, "g"), member(0, "b", 2, 2, "g"), member(1, "a", 2, 0, "g"), member(1, "b", 1, 0, "g")},
			2, 1, 1, 2, metav1.ConditionFalse, apicommon.ReasonSufficientAvailableReplicas},
		{"scheduled but not ready: breached", []*corev1alpha1.PodClique{member(0, "a", 2, 1, ""), member(0, "b", 2, 2, "")},
			1, 1, 0, 0, metav1.ConditionTrue, apicommon.ReasonInsufficientAvailableReplicas},
		{"a replica missing a member does not count", []*corev1alpha1.PodClique{member(0, "a", 2, 2, "g"), member(0, "b", 2, 2, "g"), member(1, "a", 2, 2, "g")},
			1, 1, 1, 1, metav1.ConditionFalse, apicommon.ReasonSufficientAvailableReplicas},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcsg := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "p-0-g", Labels: map[string]string{apicommon.LabelPartOfKey: "p"}},
				Spec: corev1alpha1.PodCliqueScalingGroupSpec{Replicas: 2, MinAvailable: ptr.To[int32](1), CliqueNames: []string{"a", "b"}}}
			st := computeStatus(pcsg, tc.members, "g")
			assert.Equal(t, []int32{tc.wantReplicas, tc.wantScheduled, tc.wantAvailable, tc.wantUpdated},
				[]int32{st.Replicas, st.ScheduledReplicas, st.AvailableReplicas, st.UpdatedReplicas}, "replicas, scheduled, available, updated")
			c := meta.FindStatusCondition(st.Conditions, apicommon.ConditionMinAvailableBreached)
			if assert.NotNil(t, c) {
				assert.Equal(t, tc.wantBreached, c.Status)
				assert.Equal(t, tc.wantReason, c.Reason)
			}
			assert.Equal(t, "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=p,grove.io/podcliquescalinggroup=p-0-g", *st.Selector)
		})
	}
}
