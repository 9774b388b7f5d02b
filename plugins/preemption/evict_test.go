package preemption

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// fakeAPI records what eviction does to pods and fails the calls it is told to.
type fakeAPI struct {
	mu sync.Mutex
	// failPatch and failDelete name pods whose first status patch / deletion fails.
	failPatch, failDelete map[string]bool
	// disruption is each pod's last patched DisruptionTarget status.
	disruption map[string]v1.ConditionStatus
	deleted    map[string]bool
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
	}{
		{
			name:           "every pod marked and deleted",
			wantDeleted:    []string{"a-0", "a-1", "b-0"},
			wantDisruption: map[string]v1.ConditionStatus{"a-0": v1.ConditionTrue, "a-1": v1.ConditionTrue, "b-0": v1.ConditionTrue},
		},
		{
			name:           "a pod of unit a cannot be marked: no pod of a is deleted and a-0's mark is taken back",
			failPatch:      []string{"a-1"},
			wantDeleted:    []string{"b-0"},
			wantDisruption: map[string]v1.ConditionStatus{"a-0": v1.ConditionFalse, "b-0": v1.ConditionTrue},
		},
		{
			name:           "a pod whose deletion fails loses its mark",
			failDelete:     []string{"a-1"},
			wantDeleted:    []string{"a-0", "b-0"},
			wantDisruption: map[string]v1.ConditionStatus{"a-0": v1.ConditionTrue, "a-1": v1.ConditionFalse, "b-0": v1.ConditionTrue},
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
			p := &Plugin{api: api}
			preemptor := preemptorInfo{key: "ns/high", what: "PodGang ns/high", pod: testPod("high-0", "high"), priority: 10}
			p.evictUnits(context.Background(), preemptor, []Unit{{Key: "a"}, {Key: "b"}}, [][]*v1.Pod{unitOf("a-0", "a-1"), unitOf("b-0")})
			var deleted []string
			for n := range api.deleted {
				deleted = append(deleted, n)
			}
			assert.ElementsMatch(t, tc.wantDeleted, deleted)
			assert.Equal(t, tc.wantDisruption, api.disruption)
		})
	}
}
