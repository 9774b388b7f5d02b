package gangwatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func node(name, rack, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{DefaultRackLabel: rack}},
		Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}
}

// pod i of gang g (gangs of size, `gangs` of them), bound to node ("" for pending).
func pod(g string, i, size, gangs int, nodeName string, deleteWhenBound bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("%s-%d", g, i), UID: types.UID(fmt.Sprintf("%s-%d", g, i)),
			Labels: map[string]string{
				GangLabel: g, GangSizeLabel: fmt.Sprint(size), GangCountLabel: fmt.Sprint(gangs),
			},
		},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}},
	}
	if deleteWhenBound {
		p.Labels[DeleteWhenBoundLabel] = "true"
	}
	return p
}

type event struct {
	at      float64
	pod     *corev1.Pod
	deleted bool
}

func TestTrackerReports(t *testing.T) {
	nodes := []*corev1.Node{node("n1", "r1", "2"), node("n2", "r1", "2"), node("n3", "r2", "2"), node("n4", "r2", "2")}
	tests := []struct {
		name         string
		events       []event
		stop         float64
		wantComplete []string // gangs handed back for deletion, in order
		want         Report
	}{{
		name: "a gang bound together in one rack",
		events: []event{
			{0, pod("a", 0, 2, 1, "", false), false}, {0, pod("a", 1, 2, 1, "", false), false},
			{1, pod("a", 0, 2, 1, "n1", false), false}, {1.5, pod("a", 1, 2, 1, "n2", false), false},
		},
		stop: 10,
		want: Report{ExpectedGangs: 1, Gangs: 1, WholeGangs: 1, Finished: true, AllGangsBoundSeconds: 1.5,
			LongestPartialSeconds: 0.5, GangCompletionSeconds: Percentiles{1.5, 1.5, 1.5}, GangsInOneRack: 1,
			RacksTotal: 2, RacksUsed: 1, RacksPartlyUsed: 1},
	}, {
		name: "a gang partly bound past the grace period counts once, even when it resolves",
		events: []event{
			{0, pod("a", 0, 2, 1, "n1", false), false}, {0, pod("a", 1, 2, 1, "", false), false},
			{7, pod("a", 1, 2, 1, "n3", false), false},
		},
		stop: 10,
		want: Report{ExpectedGangs: 1, Gangs: 1, WholeGangs: 1, Finished: true, AllGangsBoundSeconds: 7,
			PartiallyBoundGangs: 1, LongestPartialSeconds: 7, GangCompletionSeconds: Percentiles{7, 7, 7},
			RacksTotal: 2, RacksUsed: 2, RacksPartlyUsed: 2},
	}, {
		name: "a big gang bound slowly but steadily is not partial",
		events: []event{
			{0, pod("a", 0, 3, 1, "", false), false}, {0, pod("a", 1, 3, 1, "", false), false}, {0, pod("a", 2, 3, 1, "", false), false},
			{1, pod("a", 0, 3, 1, "n1", false), false}, {5, pod("a", 1, 3, 1, "n1", false), false}, {9, pod("a", 2, 3, 1, "n2", false), false},
		},
		stop: 10,
		want: Report{ExpectedGangs: 1, Gangs: 1, WholeGangs: 1, Finished: true, AllGangsBoundSeconds: 9,
			LongestPartialSeconds: 4, GangCompletionSeconds: Percentiles{9, 9, 9}, GangsInOneRack: 1,
			RacksTotal: 2, RacksUsed: 1, RacksPartlyUsed: 1},
	}, {
		name: "a gang still partly bound at stop counts; the other expected gang never came",
		events: []event{
			{0, pod("a", 0, 2, 2, "n1", false), false}, {0, pod("a", 1, 2, 2, "", false), false},
		},
		stop: 6,
		want: Report{ExpectedGangs: 2, Gangs: 1, PartiallyBoundGangs: 1, LongestPartialSeconds: 6,
			RacksTotal: 2, RacksUsed: 1, RacksPartlyUsed: 1},
	}, {
		name: "run to completion: a whole gang is handed back once, and its deletion is not partial",
		events: []event{
			{0, pod("a", 0, 2, 2, "", true), false}, {0, pod("a", 1, 2, 2, "", true), false},
			{0, pod("b", 0, 2, 2, "", true), false}, {0, pod("b", 1, 2, 2, "", true), false},
			{1, pod("a", 0, 2, 2, "n1", true), false}, {1, pod("a", 1, 2, 2, "n1", true), false},
			{1.2, pod("a", 1, 2, 2, "n1", true), false}, // an update after completion
			{2, pod("a", 0, 2, 2, "n1", true), true},
			{3, pod("b", 0, 2, 2, "n3", true), false}, {3, pod("b", 1, 2, 2, "n4", true), false},
			{4, pod("a", 1, 2, 2, "n1", true), true},
		},
		stop:         20,
		wantComplete: []string{"a", "b"},
		want: Report{ExpectedGangs: 2, Gangs: 2, WholeGangs: 2, DeleteWhenBound: true, Finished: true,
			AllGangsBoundSeconds: 3, GangCompletionSeconds: Percentiles{1, 3, 3}, GangsInOneRack: 2,
			RacksTotal: 2, RacksUsed: 1, RacksPartlyUsed: 1},
	}, {
		name: "rack usage is taken when the last gang became whole, not after pods went away",
		events: []event{
			{0, pod("a", 0, 1, 2, "n1", false), false},
			{1, pod("b", 0, 1, 2, "n3", false), false},
			{2, pod("a", 0, 1, 2, "n1", false), true},
		},
		stop: 3,
		want: Report{ExpectedGangs: 2, Gangs: 2, WholeGangs: 2, Finished: true, AllGangsBoundSeconds: 1,
			GangCompletionSeconds: Percentiles{0, 0, 0}, GangsInOneRack: 2, RacksTotal: 2, RacksUsed: 2, RacksPartlyUsed: 2},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(DefaultRackLabel, 5*time.Second)
			for _, n := range nodes {
				tr.setNode(n)
			}
			var completed []string
			for _, e := range tt.events {
				if e.deleted {
					tr.removePod(e.pod, at(e.at))
					continue
				}
				if k := tr.observePod(e.pod, at(e.at)); k != nil {
					completed = append(completed, k.name)
				}
			}
			assert.Equal(t, tt.wantComplete, completed)
			tt.want.Name = "w"
			got := tr.report("w", at(tt.stop), false)
			got.SlowestGangs = nil // TestTrackerReportsTheSlowestGangs
			assert.Equal(t, tt.want, got)
		})
	}
}

// The slowest gangs, slowest first, with when their members came and were bound: gang b's
// second member arrives late, gang c waits 3 s before its first binding, gang d is fast and
// gang e never becomes whole.
func TestTrackerReportsTheSlowestGangs(t *testing.T) {
	tr := newTracker(DefaultRackLabel, 5*time.Second)
	tr.setNode(node("n", "r0", "100"))
	for _, e := range []struct {
		at       float64
		gang     string
		i        int
		nodeName string
	}{
		{0, "b", 0, ""}, {0.5, "c", 0, ""}, {0.5, "c", 1, ""}, {1, "d", 0, ""}, {1, "d", 1, ""}, {1, "e", 0, ""},
		{1.5, "d", 0, "n"}, {1.5, "d", 1, "n"}, {3.5, "c", 0, "n"}, {4, "c", 1, "n"},
		{6, "b", 1, ""}, {6.5, "b", 0, "n"}, {6.5, "b", 1, "n"},
	} {
		tr.observePod(pod(e.gang, e.i, 2, 4, e.nodeName, false), at(e.at))
	}
	assert.Equal(t, []GangTimeline{
		{Gang: "b", FirstSeen: 0, LastSeen: 6, FirstBound: 6.5, Whole: 6.5},
		{Gang: "c", FirstSeen: 0.5, LastSeen: 0.5, FirstBound: 3.5, Whole: 4},
		{Gang: "d", FirstSeen: 1, LastSeen: 1, FirstBound: 1.5, Whole: 1.5},
	}, tr.report("w", at(7), false).SlowestGangs)
}

func TestTrackerIgnoresPodsWithoutGangLabels(t *testing.T) {
	tr := newTracker(DefaultRackLabel, time.Second)
	p := pod("a", 0, 2, 1, "", false)
	delete(p.Labels, GangLabel)
	assert.Nil(t, tr.observePod(p, at(0)))
	q := pod("b", 0, 2, 1, "", false)
	q.Labels[GangSizeLabel] = "zero"
	assert.Nil(t, tr.observePod(q, at(0)))
	assert.Empty(t, tr.gangs)
}

func TestDeadlineMarksUnfinished(t *testing.T) {
	tr := newTracker(DefaultRackLabel, time.Second)
	tr.setNode(node("n1", "r1", "2"))
	for i := range 2 {
		tr.observePod(pod("a", i, 2, 1, "n1", true), at(0))
	}
	assert.True(t, tr.report("w", at(1), false).Finished)
	assert.False(t, tr.report("w", at(1), true).Finished, "a deadline hit is never finished")
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, 5.0, percentile(v, 0.5))
	assert.Equal(t, 10.0, percentile(v, 0.99))
	assert.Equal(t, 10.0, percentile(v, 1))
	assert.Equal(t, 0.0, percentile(nil, 0.5))
	assert.Equal(t, Percentiles{P50: 5, P99: 10, Max: 10}, PercentilesOf([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}), "unsorted values")
}
