package preemption

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// fakeAPI records what eviction does to pods and fails the calls it is told to.
type fakeAPI struct {
	mu sync.Mutex
	// failPatch and failDelete name pods whose first status patch / deletion fails.
	failPatch, failDelete map[string]bool
	// disruption is each pod's last patched DisruptionTarget status.
	disruption map[string]v1.ConditionStatus
	deleted    map[string]bool
	// activated lists the pods brought back to the active queue.
	activated []string
}

func (f *fakeAPI) preemptWaiting(*v1.Pod, string) bool { return false }

func (f *fakeAPI) patchStatus(_ context.Context, pod *v1.Pod, newStatus *v1.PodStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPatch[pod.Name] {
		delete(f.failPatch, pod.Name)
		return errors.New("patch refused")
	}
	for _, c := range newStatus.Conditions {
		if c.Type == v1.DisruptionTarget {
			f.disruption[pod.Name] = c.Status
		}
	}
	return nil
}

func (f *fakeAPI) deletePod(_ context.Context, pod *v1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failDelete[pod.Name] {
		return errors.New("delete refused")
	}
	f.deleted[pod.Name] = true
	return nil
}

func (f *fakeAPI) preempted(*v1.Pod, runtime.Object, string) {}

func (f *fakeAPI) activate(pods map[string]*v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range pods {
		f.activated = append(f.activated, k)
	}
}

// TestEvictionTakesBackMarksOfPodsItDidNotEvict: a unit is evicted whole or not at all, and a pod
// left running does not keep a DisruptionTarget condition saying it is being evicted.
func TestEvictionTakesBackMarksOfPodsItDidNotEvict(t *testing.T) {
	unitOf := func(names ...string) []*v1.Pod {
		var out []*v1.Pod
		for _, n := range names {
			out = append(out, testPod(n, ""))
		}
		return out
	}
	tests := []struct {
		name                  string
		failPatch, failDelete []string
		wantDeleted           []string
		wantDisruption        map[string]v1.ConditionStatus
		// wantWaitingFor is how many victims the preemptor still waits for; a preemptor that
		// no longer waits for all of them is retried at once.
		wantWaitingFor int
	}{
		{
			name:           "every pod marked and deleted",
			wantDeleted:    []string{"a-0", "a-1", "b-0"},
			wantDisruption: map[string]v1.ConditionStatus{"a-0": v1.ConditionTrue, "a-1": v1.ConditionTrue, "b-0": v1.ConditionTrue},
			wantWaitingFor: 3,
		},
		{
			name:           "a pod of unit a cannot be marked: no pod of a is deleted and a-0's mark is taken back",
			failPatch:      []string{"a-1"},
			wantDeleted:    []string{"b-0"},
			wantDisruption: map[string]v1.ConditionStatus{"a-0": v1.ConditionFalse, "b-0": v1.ConditionTrue},
			wantWaitingFor: 1,
		},
		{
			name:           "a pod whose deletion fails loses its mark",
			failDelete:     []string{"a-1"},
			wantDeleted:    []string{"a-0", "b-0"},
			wantDisruption: map[string]v1.ConditionStatus{"a-0": v1.ConditionTrue, "a-1": v1.ConditionFalse, "b-0": v1.ConditionTrue},
			wantWaitingFor: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeAPI{failPatch: map[string]bool{}, failDelete: map[string]bool{}, disruption: map[string]v1.ConditionStatus{}, deleted: map[string]bool{}}
			for _, n := range tc.failPatch {
				api.failPatch[n] = true
			}
			for _, n := range tc.failDelete {
				api.failDelete[n] = true
			}
			p := &Plugin{api: api, inflight: newInflight()}
			high := testPod("high", "")
			preemptor := preemptorInfo{key: podKey(high), what: "pod ns/high", pod: high, priority: 10}
			units := [][]*v1.Pod{unitOf("a-0", "a-1"), unitOf("b-0")}
			p.inflight.start(preemptor.key, units, "a, b", time.Now().Add(time.Hour))
			p.evictUnits(context.Background(), preemptor, []Unit{{Key: "a"}, {Key: "b"}}, units)
			var deleted []string
			for n := range api.deleted {
				deleted = append(deleted, n)
			}
			assert.ElementsMatch(t, tc.wantDeleted, deleted)
			assert.Equal(t, tc.wantDisruption, api.disruption)
			// Every victim still exists in this test: what is counted is what the preemptor waits for.
			waiting, _ := p.inflight.remaining(preemptor.key, func(types.NamespacedName, types.UID) bool { return true }, time.Now())
			assert.Equal(t, tc.wantWaitingFor, waiting)
			if tc.wantWaitingFor < 3 {
				assert.Equal(t, []string{"ns/high"}, api.activated, "the preemptor is retried")
			} else {
				assert.Empty(t, api.activated)
			}
		})
	}
}
