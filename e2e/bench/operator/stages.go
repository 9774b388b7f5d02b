package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"

	"github.com/ai-dynamo/grove/e2e/bench/gangwatch"
)

// Where a rollout's time goes, PodGang by PodGang: the tracker's once-a-second counts show the
// waves only as a whole, and a wave is as slow as its slowest step (the operator noticing a
// replica ready, deleting the next, creating, listing, binding). A PodGang's old and new pods
// carry the same PodGang label, so each PodGang is one unit of the update.

// Rollout stages of a PodGang, in order; each is the first poll that saw it.
const (
	SDeleted  = "first old pod deleted"
	SCreated  = "all replacements created"
	SReleased = "all released"
	SBound    = "all bound"
	SReady    = "all Ready"
)

var rolloutStages = []string{SDeleted, SCreated, SReleased, SBound, SReady}

// RolloutStages is a rollout's per-PodGang figures (seconds, median / p99 / max over its PodGangs).
type RolloutStages struct {
	Gangs int `json:"gangs"`
	// Steps are the durations from one stage to the next (key "A → B"), and from deleted to Ready.
	Steps map[string]gangwatch.Percentiles `json:"steps"`
	// Refill is, for each PodGang deleted after the first wave, the time since the last PodGang
	// became Ready before it: how long the operator took to spend budget a finished gang freed.
	Refill *gangwatch.Percentiles `json:"refill,omitempty"`
}

// stageTracker accumulates the stages of each PodGang across polls.
type stageTracker struct {
	size  map[string]int       // old pods per PodGang when the rollout started
	oldOf map[types.UID]string // old pod → PodGang
	reach map[string]map[string]time.Duration
}

func newStageTracker() *stageTracker {
	return &stageTracker{reach: map[string]map[string]time.Duration{}}
}

// observe records what this poll shows; pods are the namespace's, listed the fresh pods some
// PodGang references.
func (s *stageTracker) observe(now time.Duration, old map[types.UID]bool, pods []corev1.Pod, listed map[string]bool) {
	if s.size == nil {
		s.size, s.oldOf = map[string]int{}, map[types.UID]string{}
		for i := range pods {
			p := &pods[i]
			if g := p.Labels[apicommon.LabelPodGang]; old[p.UID] && g != "" {
				s.size[g]++
				s.oldOf[p.UID] = g
			}
		}
	}
	seen := map[types.UID]bool{}
	type counts struct{ created, released, bound, ready int }
	fresh := map[string]*counts{}
	for i := range pods {
		p := &pods[i]
		if g, isOld := s.oldOf[p.UID]; isOld {
			if p.DeletionTimestamp == nil {
				seen[p.UID] = true
			} else {
				s.mark(g, SDeleted, now)
			}
			continue
		}
		g := p.Labels[apicommon.LabelPodGang]
		if old[p.UID] || p.DeletionTimestamp != nil || s.size[g] == 0 {
			continue
		}
		c := fresh[g]
		if c == nil {
			c = &counts{}
			fresh[g] = c
		}
		c.created++
		if listed[p.Name] || p.Spec.NodeName != "" {
			c.released++
		}
		if p.Spec.NodeName != "" {
			c.bound++
		}
		if slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			c.ready++
		}
	}
	for uid, g := range s.oldOf {
		if !seen[uid] {
			s.mark(g, SDeleted, now) // gone, or terminating
		}
	}
	for g, c := range fresh {
		n := s.size[g]
		for stage, count := range map[string]int{SCreated: c.created, SReleased: c.released, SBound: c.bound, SReady: c.ready} {
			if count >= n {
				s.mark(g, stage, now)
			}
		}
	}
}

func (s *stageTracker) mark(g, stage string, now time.Duration) {
	m := s.reach[g]
	if m == nil {
		m = map[string]time.Duration{}
		s.reach[g] = m
	}
	if _, done := m[stage]; !done {
		m[stage] = now
	}
}

// result summarizes the PodGangs that went through every stage.
func (s *stageTracker) result() *RolloutStages {
	steps := map[string][]float64{}
	var deleted, ready []time.Duration
	n := 0
	for _, m := range s.reach {
		if len(m) < len(rolloutStages) {
			continue
		}
		n++
		for i := 1; i < len(rolloutStages); i++ {
			k := rolloutStages[i-1] + " → " + rolloutStages[i]
			steps[k] = append(steps[k], max(0, m[rolloutStages[i]]-m[rolloutStages[i-1]]).Seconds())
		}
		steps[SDeleted+" → "+SReady] = append(steps[SDeleted+" → "+SReady], (m[SReady] - m[SDeleted]).Seconds())
		deleted, ready = append(deleted, m[SDeleted]), append(ready, m[SReady])
	}
	if n == 0 {
		return nil
	}
	out := &RolloutStages{Gangs: n, Steps: map[string]gangwatch.Percentiles{}}
	for k, v := range steps {
		out.Steps[k] = gangwatch.PercentilesOf(v)
	}
	slices.Sort(deleted)
	slices.Sort(ready)
	var refill []float64
	for _, d := range deleted {
		// The last PodGang Ready before this deletion; none: it went in the first wave.
		i, _ := slices.BinarySearch(ready, d)
		if i > 0 {
			refill = append(refill, (d - ready[i-1]).Seconds())
		}
	}
	if len(refill) > 0 {
		p := gangwatch.PercentilesOf(refill)
		out.Refill = &p
	}
	return out
}

// stageSteps are the steps in the order they are printed.
func stageSteps() []string {
	var out []string
	for i := 1; i < len(rolloutStages); i++ {
		out = append(out, rolloutStages[i-1]+" → "+rolloutStages[i])
	}
	return append(out, SDeleted+" → "+SReady)
}

// String is one line per step: median / p99 / max seconds.
func (r *RolloutStages) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "per PodGang (%d), seconds median / p99 / max:", r.Gangs)
	for _, k := range stageSteps() {
		p := r.Steps[k]
		fmt.Fprintf(&b, "\n     %-50s %5.1f / %5.1f / %5.1f", k, p.P50, p.P99, p.Max)
	}
	if r.Refill != nil {
		fmt.Fprintf(&b, "\n     %-50s %5.1f / %5.1f / %5.1f", "last PodGang Ready → next first deletion", r.Refill.P50, r.Refill.P99, r.Refill.Max)
	}
	return b.String()
}

// stagesTable is RESULTS.md's per-PodGang steps of each rollout.
func stagesTable(p func(string, ...any), results []*Result) {
	heads := append(stageSteps(), "last PodGang Ready → next first deletion")
	first := true
	for _, r := range results {
		if r.Stages == nil {
			continue
		}
		if first {
			p("\nPer PodGang of each rollout, seconds (median / p99) from one step to the next, each the first poll (50 ms) that saw it; the last column is, for each PodGang deleted after the first wave, the time since the last PodGang before it became Ready (how long freed budget waited to be spent).\n\n")
			p("| workload | PodGangs | %s |\n|---|---:|%s\n", strings.Join(heads, " | "), strings.Repeat("---:|", len(heads)))
			first = false
		}
		row := []string{r.Name, fmt.Sprint(r.Stages.Gangs)}
		for _, k := range stageSteps() {
			row = append(row, pcts(r.Stages.Steps[k], true))
		}
		if r.Stages.Refill != nil {
			row = append(row, pcts(*r.Stages.Refill, true))
		} else {
			row = append(row, "–")
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
}
