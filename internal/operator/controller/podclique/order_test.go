package podclique

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

type podState struct {
	name     string
	node     string
	ready    bool
	age      time.Duration
	podIndex int
	outdated bool
}

func mkPod(s podState) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:              s.name,
		CreationTimestamp: metav1.NewTime(time.Unix(10000, 0).Add(-s.age)),
		Labels:            map[string]string{apicommon.LabelPodCliquePodIndex: strconv.Itoa(s.podIndex), apicommon.LabelPodTemplateHash: "current"},
	}}
	if s.outdated {
		p.Labels[apicommon.LabelPodTemplateHash] = "previous"
	}
	p.Spec.NodeName = s.node
	if s.ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func TestSortForDeletion(t *testing.T) {
	cases := []struct {
		name string
		pods []podState
		want []string
	}{
		{"unscheduled before scheduled", []podState{
			{name: "scheduled", node: "n1", age: time.Second},
			{name: "pending", age: time.Hour},
		}, []string{"pending", "scheduled"}},
		{"not ready before ready", []podState{
			{name: "ready", node: "n1", ready: true},
			{name: "not-ready", node: "n1", age: time.Hour},
		}, []string{"not-ready", "ready"}},
		{"newest first", []podState{
			{name: "old", age: time.Hour},
			{name: "new", age: time.Minute},
		}, []string{"new", "old"}},
		{"same age: highest index first", []podState{
			{name: "i1", podIndex: 1},
			{name: "i3", podIndex: 3},
			{name: "i2", podIndex: 2},
		}, []string{"i3", "i2", "i1"}},
		{"outdated before updated", []podState{
			{name: "updated", node: "n", ready: true, age: time.Hour},
			{name: "outdated", node: "n", ready: true, age: time.Hour * 2, outdated: true},
		}, []string{"outdated", "updated"}},
		{"availability before the template", []podState{
			{name: "ready-outdated", node: "n", ready: true, outdated: true},
			{name: "starting-updated", node: "n"},
		}, []string{"starting-updated", "ready-outdated"}},
		{"all rules together", []podState{
			{name: "ready-old", node: "n", ready: true, age: time.Hour},
			{name: "ready-new", node: "n", ready: true, age: time.Minute},
			{name: "scheduled", node: "n", age: time.Hour},
			{name: "pending-old", age: time.Hour},
			{name: "pending-new", age: time.Second},
		}, []string{"pending-new", "pending-old", "scheduled", "ready-new", "ready-old"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for _, s := range tc.pods {
				pods = append(pods, mkPod(s))
			}
			sortForDeletion(pods, "current")
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLowestFreeIndices(t *testing.T) {
	cases := []struct {
		used map[int]bool
		n    int
		want []int
	}{
		{nil, 3, []int{0, 1, 2}},
		{map[int]bool{0: true, 2: true}, 3, []int{1, 3, 4}},
		{map[int]bool{1: true}, 1, []int{0}},
		{map[int]bool{0: true}, 0, []int{}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, lowestFreeIndices(tc.used, tc.n))
	}
}
