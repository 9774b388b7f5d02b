package gang

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// queued is a queued pod: gang "" means a pod outside gangs.
func queued(t *testing.T, name, gang, group string, priority int32, queuedAt time.Duration) fwk.QueuedEntityInfo {
	t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PodSpec{Priority: ptr.To(priority)}}
	if gang != "" {
		pod.Labels = map[string]string{common.LabelPodGang: gang, common.LabelPodClique: group}
	}
	info, err := framework.NewPodInfo(pod)
	require.NoError(t, err)
	return &framework.QueuedPodInfo{PodInfo: info, QueueingParams: framework.QueueingParams{Timestamp: t0.Add(queuedAt)}}
}

func TestLessKeepsGangsTogetherAndAgesFailedGangs(t *testing.T) {
	cases := []struct {
		name string
		// gangTimes is each gang's queue time (its PodGang's creation or last failed attempt).
		gangTimes map[string]time.Duration
		// arrivals is when each gang's first member reached the queue.
		arrivals map[string]time.Duration
		pods     []fwk.QueuedEntityInfo
		want     []string
	}{
		{
			name:      "members of a gang stay adjacent though queued at different times, PodGroup by PodGroup",
			gangTimes: map[string]time.Duration{"ns/a": 0, "ns/b": time.Second},
			pods: []fwk.QueuedEntityInfo{
				queued(t, "b-w-0", "b", "w", 0, 0),
				queued(t, "a-w-1", "a", "w", 0, 5*time.Second),
				queued(t, "plain", "", "", 0, 500*time.Millisecond),
				queued(t, "a-d-0", "a", "d", 0, 9*time.Second),
				queued(t, "a-w-0", "a", "w", 0, 7*time.Second),
				queued(t, "b-w-1", "b", "w", 0, 8*time.Second),
			},
			want: []string{"a-d-0", "a-w-0", "a-w-1", "plain", "b-w-0", "b-w-1"},
		},
		{
			name:      "priority first",
			gangTimes: map[string]time.Duration{"ns/a": 0, "ns/b": time.Second},
			pods: []fwk.QueuedEntityInfo{
				queued(t, "a-w-0", "a", "w", 0, 0),
				queued(t, "b-w-0", "b", "w", 100, 0),
				queued(t, "plain", "", "", 50, 0),
			},
			want: []string{"b-w-0", "plain", "a-w-0"},
		},
		{
			name: "a gang that just failed queues behind gangs created after it",
			// Gang a was created first but failed an attempt at 10s.
			gangTimes: map[string]time.Duration{"ns/a": 10 * time.Second, "ns/b": time.Second, "ns/c": 2 * time.Second},
			pods: []fwk.QueuedEntityInfo{
				queued(t, "a-w-0", "a", "w", 0, 0),
				queued(t, "c-w-0", "c", "w", 0, 0),
				queued(t, "b-w-0", "b", "w", 0, 0),
			},
			want: []string{"b-w-0", "c-w-0", "a-w-0"},
		},
		{
			name:      "same queue time: gangs by name, never interleaved",
			gangTimes: map[string]time.Duration{"ns/a": 0, "ns/b": 0},
			pods: []fwk.QueuedEntityInfo{
				queued(t, "b-w-0", "b", "w", 0, 0),
				queued(t, "a-w-1", "a", "w", 0, 0),
				queued(t, "b-w-1", "b", "w", 0, 0),
				queued(t, "a-w-0", "a", "w", 0, 0),
			},
			want: []string{"a-w-0", "a-w-1", "b-w-0", "b-w-1"},
		},
		{
			// PodGangs created in one second (creationTimestamp has whole seconds) queue as their
			// members came, not by name.
			name:      "same queue time: gangs in the order their members arrived",
			gangTimes: map[string]time.Duration{"ns/gang-9": 0, "ns/gang-10": 0, "ns/gang-11": 0},
			arrivals:  map[string]time.Duration{"ns/gang-9": 100 * time.Millisecond, "ns/gang-10": 200 * time.Millisecond, "ns/gang-11": 300 * time.Millisecond},
			pods: []fwk.QueuedEntityInfo{
				queued(t, "g11", "gang-11", "w", 0, 0),
				queued(t, "g10", "gang-10", "w", 0, 0),
				queued(t, "g9", "gang-9", "w", 0, 0),
			},
			want: []string{"g9", "g10", "g11"},
		},
		{
			name:      "a failed gang's later queue time outweighs its early arrival",
			gangTimes: map[string]time.Duration{"ns/a": 10 * time.Second, "ns/b": 0},
			arrivals:  map[string]time.Duration{"ns/a": 0, "ns/b": 5 * time.Second},
			pods: []fwk.QueuedEntityInfo{
				queued(t, "a-w-0", "a", "w", 0, 0),
				queued(t, "b-w-0", "b", "w", 0, 0),
			},
			want: []string{"b-w-0", "a-w-0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plugin{gangs: &gangcache.Shared{Cache: gangcache.New()}}
			for gang, at := range tc.gangTimes {
				p.setQueueTime(gang, t0.Add(at))
			}
			for gang, at := range tc.arrivals {
				p.gangs.Arrive(gang, t0.Add(at))
				p.gangs.Arrive(gang, t0.Add(time.Hour)) // only the first arrival counts
			}
			pods := append([]fwk.QueuedEntityInfo(nil), tc.pods...)
			sort.SliceStable(pods, func(i, j int) bool { return p.Less(pods[i], pods[j]) })
			var got []string
			for _, e := range pods {
				got = append(got, e.(*framework.QueuedPodInfo).Pod.Name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLessAllocatesNothing(t *testing.T) {
	p := &Plugin{gangs: &gangcache.Shared{Cache: gangcache.New()}}
	p.setQueueTime("ns/a", t0)
	p.gangs.Arrive("ns/a", t0)
	a, b := queued(t, "a-w-0", "a", "w", 0, 0), queued(t, "plain", "", "", 0, time.Second)
	assert.Zero(t, testing.AllocsPerRun(100, func() { p.Less(a, b); p.Less(b, a) }))
}
