package schedulere2e

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// bindingChecker watches every binding of a test's pods and flags any PodGang that is partly
// bound — some member bound while a PodGroup has fewer than minReplicas bound — for longer than
// it takes to release one Permit barrier, or at the end of the test. Releasing a barrier binds
// the members one API call each: a partial gang whose bindings stall for grace, or that is
// still partial after maxPartial, was not released whole. A gang whose pods the test deletes
// is retired first and no longer judged.
type bindingChecker struct {
	mu         sync.Mutex
	now        func() time.Time
	grace      time.Duration
	maxPartial time.Duration
	gangs      map[string]*gangRecord
	// violations are the partial gangs found, each reported once.
	violations []string
	// bindings counts every binding seen.
	bindings int
}

type gangRecord struct {
	mins         map[string]int32
	bound        map[string]map[types.UID]struct{}
	partialSince time.Time
	lastBinding  time.Time
	reported     bool
	retired      bool
	// everPlaced is set once every PodGroup had minReplicas bound.
	everPlaced bool
}

func newBindingChecker(now func() time.Time, grace, maxPartial time.Duration) *bindingChecker {
	return &bindingChecker{now: now, grace: grace, maxPartial: maxPartial, gangs: map[string]*gangRecord{}}
}

func (c *bindingChecker) record(gang string) *gangRecord {
	r := c.gangs[gang]
	if r == nil {
		r = &gangRecord{bound: map[string]map[types.UID]struct{}{}}
		c.gangs[gang] = r
	}
	return r
}

// expect declares a gang's PodGroups and their minReplicas.
func (c *bindingChecker) expect(gang string, mins map[string]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(gang).mins = mins
	c.evaluate(gang)
}

// retire stops judging a gang whose pods the test is about to delete.
func (c *bindingChecker) retire(gang string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(gang).retired = true
}

// clear forgets every violation and stops judging: for a control test that expects them.
func (c *bindingChecker) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = nil
	for _, r := range c.gangs {
		r.retired = true
	}
}

// observe takes a pod as a watch reports it; deleted pods no longer count as bound.
func (c *bindingChecker) observe(pod *v1.Pod, deleted bool) {
	gang, ok := pod.Labels[common.LabelPodGang]
	if !ok {
		return
	}
	group := pod.Labels[common.LabelPodClique]
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record(gang)
	if r.bound[group] == nil {
		r.bound[group] = map[types.UID]struct{}{}
	}
	_, was := r.bound[group][pod.UID]
	switch {
	case deleted:
		delete(r.bound[group], pod.UID)
	case pod.Spec.NodeName != "" && !was:
		r.bound[group][pod.UID] = struct{}{}
		r.lastBinding = c.now()
		c.bindings++
	}
	c.evaluate(gang)
}

func (c *bindingChecker) partial(r *gangRecord) (bool, string) {
	if r.mins == nil || r.retired {
		return false, ""
	}
	total := 0
	var short []string
	for _, set := range r.bound {
		total += len(set)
	}
	groups := make([]string, 0, len(r.mins))
	for g := range r.mins {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		if n := int32(len(r.bound[g])); n < r.mins[g] {
			short = append(short, fmt.Sprintf("%s %d/%d", g, n, r.mins[g]))
		}
	}
	if len(short) == 0 {
		r.everPlaced = true
	}
	return total > 0 && len(short) > 0, fmt.Sprintf("%d bound, short: %v", total, short)
}

func (c *bindingChecker) evaluate(gang string) {
	r := c.gangs[gang]
	if partial, _ := c.partial(r); !partial {
		r.partialSince = time.Time{}
	} else if r.partialSince.IsZero() {
		r.partialSince = c.now()
	}
}

// check reports gangs whose partial binding stalled or lasts too long.
func (c *bindingChecker) check() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for gang, r := range c.gangs {
		partial, detail := c.partial(r)
		if !partial || r.reported {
			continue
		}
		switch {
		case now.Sub(r.lastBinding) > c.grace:
			r.reported = true
			c.violations = append(c.violations, fmt.Sprintf("PodGang %s partly bound with no binding for over %s: %s", gang, c.grace, detail))
		case now.Sub(r.partialSince) > c.maxPartial:
			r.reported = true
			c.violations = append(c.violations, fmt.Sprintf("PodGang %s partly bound for over %s: %s", gang, c.maxPartial, detail))
		}
	}
}

// settled reports whether no gang is partly bound but for a violation already recorded: the
// bindings of a released gang may still be arriving through the watch when a test ends.
func (c *bindingChecker) settled() bool {
	c.check()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.gangs {
		if partial, _ := c.partial(r); partial && !r.reported {
			return false
		}
	}
	return true
}

// final reports every gang partly bound now, however briefly.
func (c *bindingChecker) final() []string {
	c.check()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]string(nil), c.violations...)
	for gang, r := range c.gangs {
		if partial, detail := c.partial(r); partial && !r.reported {
			out = append(out, fmt.Sprintf("PodGang %s partly bound at the end: %s", gang, detail))
		}
	}
	sort.Strings(out)
	return out
}

// recorded returns the violations found by check so far.
func (c *bindingChecker) recorded() []string {
	c.check()
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// placed reports whether every PodGroup of the gang had minReplicas bound at some moment.
func (c *bindingChecker) placed(gang string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.gangs[gang]
	return r != nil && r.everPlaced
}

func (c *bindingChecker) bindingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bindings
}

// The checker must be able to fail: these are the cases it exists for.
func TestBindingCheckerFlagsPartlyBoundGangs(t *testing.T) {
	const grace, maxPartial = 3 * time.Second, 10 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(gang, group, uid, node string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{common.LabelPodGang: gang, common.LabelPodClique: group}},
			Spec:       v1.PodSpec{NodeName: node},
		}
	}
	type step struct {
		at      time.Duration
		pod     *v1.Pod
		deleted bool
		retire  bool
	}
	cases := []struct {
		name  string
		steps []step
		want  []string
	}{
		{
			name: "whole gang bound within the grace period",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "n1")},
				{at: time.Second, pod: pod("g", "a", "2", "n1")},
				{at: 2 * time.Second, pod: pod("g", "b", "3", "n2")},
			},
		},
		{
			name: "gang stuck half bound",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "n1")},
				{at: 0, pod: pod("g", "a", "2", "n1")},
				{at: 5 * time.Second},
			},
			want: []string{"PodGang g partly bound with no binding for over 3s: 2 bound, short: [b 0/1]"},
		},
		{
			name: "gang completed too slowly still counts",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "n1")},
				{at: 4 * time.Second},
				{at: 4 * time.Second, pod: pod("g", "a", "2", "n1")},
				{at: 4 * time.Second, pod: pod("g", "b", "3", "n1")},
			},
			want: []string{"PodGang g partly bound with no binding for over 3s: 1 bound, short: [a 1/2 b 0/1]"},
		},
		{
			name: "bindings arriving steadily are a barrier being released",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "n1")},
				{at: 2 * time.Second, pod: pod("g", "a", "2", "n1")},
				{at: 4 * time.Second, pod: pod("g", "b", "3", "n1")},
				{at: 20 * time.Second},
			},
		},
		{
			name: "a release that never ends counts however steady",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "n1")},
				{at: 3 * time.Second, pod: pod("g", "b", "3", "n1")},
				{at: 6 * time.Second, pod: pod("g", "b", "4", "n1")},
				{at: 9 * time.Second, pod: pod("g", "b", "5", "n1")},
				{at: 11 * time.Second},
			},
			want: []string{"PodGang g partly bound for over 10s: 4 bound, short: [a 1/2]"},
		},
		{
			name: "partly bound at the end, however briefly",
			steps: []step{
				{at: 0, pod: pod("g", "b", "3", "n1")},
			},
			want: []string{"PodGang g partly bound at the end: 1 bound, short: [a 0/2]"},
		},
		{
			name: "a retired gang whose pods are deleted is not judged",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "n1")},
				{at: 0, pod: pod("g", "a", "2", "n1")},
				{at: 0, pod: pod("g", "b", "3", "n1")},
				{at: time.Second, retire: true},
				{at: time.Second, pod: pod("g", "a", "1", "n1"), deleted: true},
				{at: 10 * time.Second},
			},
		},
		{
			name: "an unbound pod is not a binding",
			steps: []step{
				{at: 0, pod: pod("g", "a", "1", "")},
				{at: 10 * time.Second},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := start
			c := newBindingChecker(func() time.Time { return now }, grace, maxPartial)
			c.expect("g", map[string]int32{"a": 2, "b": 1})
			for _, s := range tc.steps {
				now = start.Add(s.at)
				if s.retire {
					c.retire("g")
				}
				if s.pod != nil {
					c.observe(s.pod, s.deleted)
				}
				c.check()
			}
			assert.Equal(t, tc.want, nonNil(c.final()))
		})
	}
}

func nonNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
