package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ai-dynamo/grove/e2e/bench/gangwatch"
	"github.com/ai-dynamo/grove/e2e/bench/internal/perfdata"
)

// The table's rows, in order. A scheduler_perf test case belongs to the first scheduler its name
// starts with (BaselineAgain is a Baseline); other test cases are left out.
var schedulers = []string{"Baseline", "Grove", "Native", "Coscheduling"}

// primaryTopic is e2e/bench/compare's scheduler_perf topic: its Baseline is the table's.
const primaryTopic = "compare"

const (
	perfPrefix      = "BenchmarkPerfScheduling_benchmark_"
	gangwatchPrefix = "gangwatch_"
)

func schedulerOf(testCase string) (string, bool) {
	for _, s := range schedulers {
		if strings.HasPrefix(testCase, s) {
			return s, true
		}
	}
	return "", false
}

// topicOf returns <topic> of BenchmarkPerfScheduling_benchmark_<topic>_<timestamp>.json.
func topicOf(file string) (string, bool) {
	base := filepath.Base(file)
	if !strings.HasPrefix(base, perfPrefix) || !strings.HasSuffix(base, ".json") {
		return "", false
	}
	rest := strings.TrimSuffix(strings.TrimPrefix(base, perfPrefix), ".json")
	if i := strings.LastIndex(rest, "_"); i > 0 {
		return rest[:i], true
	}
	return rest, rest != ""
}

// measurement is what one test case measured for one workload.
type measurement struct {
	// Throughput in pods/s; ok false when scheduler_perf recorded none (e.g. all pods bound
	// within its first one-second sample).
	throughputAvg, throughputP50 float64
	hasThroughput                bool
	// Per-pod scheduling attempt latency (result=scheduled), p99 in ms.
	attemptP99    float64
	hasAttemptP99 bool
	// Pod-group scheduling cycles: only Kubernetes' native gang scheduling has them. Their
	// evidence is the PlacementFeasible extension point (run for each pod placed inside a
	// pod-group cycle, and only there); placementFeasibleAvg is its mean duration in ms.
	placementFeasibleAvg float64
	hasGroupCycles       bool
	// Durations in ms: per extension point (scheduler_framework_extension_point_duration_seconds,
	// one observation per scheduling cycle) and per "plugin/extension point"
	// (scheduler_plugin_execution_duration_seconds, observed in 10% of the cycles; Filter and
	// Score once per node).
	extensionPoints map[string]duration
	plugins         map[string]duration
	gangs           *gangwatch.Report
}

// duration is one histogram's mean and p99, in ms.
type duration struct{ avg, p99 float64 }

type key struct{ run, scheduler, workload string }

type results struct {
	// runs in the order found, primaryTopic first.
	runs []string
	// rounds per run: how many scheduler_perf result files it wrote (make bench-compare
	// BENCH_COMPARE_ROUNDS); every value is a mean over them.
	rounds map[string]int
	// measurements per run, scheduler and workload, one per test case (Baseline and
	// BaselineAgain are both Baseline).
	m map[key][]measurement
	// workloads in the order they first ran.
	workloads []string
	// testCases per key, to name them in warnings.
	testCases map[key][]string
}

func newResults() *results {
	return &results{m: map[key][]measurement{}, testCases: map[key][]string{}, rounds: map[string]int{}}
}

func (r *results) addWorkload(w string) {
	for _, seen := range r.workloads {
		if seen == w {
			return
		}
	}
	r.workloads = append(r.workloads, w)
}

func (r *results) addRun(run string) {
	for _, seen := range r.runs {
		if seen == run {
			return
		}
	}
	r.runs = append(r.runs, run)
	sort.SliceStable(r.runs, func(i, j int) bool { return r.runs[i] == primaryTopic && r.runs[j] != primaryTopic })
}

// load reads every scheduler_perf result file and gangwatch report in dir.
func load(dir string) (*results, error) {
	r := newResults()
	perfFiles, err := filepath.Glob(filepath.Join(dir, perfPrefix+"*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(perfFiles)
	for _, f := range perfFiles {
		run, ok := topicOf(f)
		if !ok {
			continue
		}
		items, err := perfdata.Read(f)
		if err != nil {
			return nil, err
		}
		if err := r.addPerf(run, items); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	gwFiles, err := filepath.Glob(filepath.Join(dir, gangwatchPrefix+"*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(gwFiles)
	for _, f := range gwFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var rep gangwatch.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if err := r.addGangwatch(rep); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return r, nil
}

// addPerf adds one run's scheduler_perf data items.
func (r *results) addPerf(run string, items perfdata.DataItems) error {
	r.addRun(run)
	r.rounds[run]++
	type tcw struct{ testCase, workload string }
	var order []tcw
	per := map[tcw]*measurement{}
	for _, item := range items.DataItems {
		tc, wl, err := item.Names()
		if err != nil {
			return err
		}
		k := tcw{tc, wl}
		m := per[k]
		if m == nil {
			m = &measurement{}
			per[k] = m
			order = append(order, k)
		}
		switch {
		case item.Metric() == "SchedulingThroughput":
			m.throughputAvg, m.throughputP50, m.hasThroughput = item.Data["Average"], item.Data["Perc50"], true
		case item.Metric() == "scheduler_scheduling_attempt_duration_seconds" && item.Labels["result"] == "scheduled":
			m.attemptP99, m.hasAttemptP99 = toMillis(item.Data["Perc99"], item.Unit), true
		case item.Metric() == "scheduler_framework_extension_point_duration_seconds":
			ep := item.Labels["extension_point"]
			if ep == "PlacementFeasible" && item.Data["Average"] > 0 {
				m.placementFeasibleAvg, m.hasGroupCycles = toMillis(item.Data["Average"], item.Unit), true
			}
			if ep != "" {
				if m.extensionPoints == nil {
					m.extensionPoints = map[string]duration{}
				}
				m.extensionPoints[ep] = durationOf(item)
			}
		case item.Metric() == "scheduler_plugin_execution_duration_seconds":
			pl, ep := item.Labels["plugin"], item.Labels["extension_point"]
			if pl != "" && ep != "" {
				if m.plugins == nil {
					m.plugins = map[string]duration{}
				}
				m.plugins[pl+"/"+ep] = durationOf(item)
			}
		}
	}
	for _, k := range order {
		s, ok := schedulerOf(k.testCase)
		if !ok {
			continue
		}
		r.addWorkload(k.workload)
		kk := key{run, s, k.workload}
		r.m[kk] = append(r.m[kk], *per[k])
		r.testCases[kk] = append(r.testCases[kk], k.testCase)
	}
	return nil
}

// addGangwatch attaches a gangwatch report to its test case's measurement (see parseReportName);
// a name without a topic belongs to the first run that has that test case and workload.
func (r *results) addGangwatch(rep gangwatch.Report) error {
	run, tc, wl, err := parseReportName(rep.Name)
	if err != nil {
		return err
	}
	s, ok := schedulerOf(tc)
	if !ok {
		return nil
	}
	if run == "" {
		for _, candidate := range r.runs {
			if containsString(r.testCases[key{candidate, s, wl}], tc) {
				run = candidate
				break
			}
		}
		if run == "" {
			return fmt.Errorf("gangwatch report %q: no scheduler_perf result for it", rep.Name)
		}
	}
	r.addRun(run)
	r.addWorkload(wl)
	k := key{run, s, wl}
	ms := r.m[k]
	for i, name := range r.testCases[k] {
		if name == tc && ms[i].gangs == nil {
			ms[i].gangs = &rep
			return nil
		}
	}
	// gangwatch ran but scheduler_perf recorded nothing (e.g. the workload failed).
	r.m[k] = append(r.m[k], measurement{gangs: &rep})
	r.testCases[k] = append(r.testCases[k], tc)
	return nil
}

// parseReportName accepts "[<topic>/]BenchmarkPerfScheduling/<test case>/<workload>" (this
// module's, tCtx.Name() with the topic in front) and "<topic>_<test case>_<workload>" (test case
// names have no underscores; workload names do).
func parseReportName(name string) (run, testCase, workload string, err error) {
	if !strings.Contains(name, "/") {
		parts := strings.SplitN(name, "_", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return "", "", "", fmt.Errorf("unexpected gangwatch report name %q", name)
		}
		return parts[0], parts[1], parts[2], nil
	}
	parts := strings.Split(name, "/")
	if len(parts) >= 1 && parts[0] != "BenchmarkPerfScheduling" {
		run, parts = parts[0], parts[1:]
	}
	if len(parts) < 3 || parts[0] != "BenchmarkPerfScheduling" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("unexpected gangwatch report name %q", name)
	}
	return run, parts[1], parts[2], nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func durationOf(item perfdata.DataItem) duration {
	return duration{avg: toMillis(item.Data["Average"], item.Unit), p99: toMillis(item.Data["Perc99"], item.Unit)}
}

func toMillis(v float64, unit string) float64 {
	switch unit {
	case "s":
		return v * 1000
	case "us", "µs":
		return v / 1000
	default: // scheduler_perf reports durations in ms
		return v
	}
}

// stats is the mean over a scheduler's test cases (the Baseline runs more than once).
type stats struct {
	ran                           bool
	throughputAvg, throughputP50  opt
	attemptP99, placementFeasible opt
	allGangsBound                 opt
	unfinished                    int // gangwatch reports that hit the deadline
	gangwatchRuns                 int
	partial, inOneRack            opt
	longestPartial                opt // seconds
	// completionP50/P99: gangwatch's per-gang completion time (first pod seen to gang whole),
	// from the reports that finished with at least one whole gang.
	completionP50, completionP99 opt
	gangs                        opt
	racksPartlyUsed, racksUsed   opt
	racksTotal                   opt
	hasGroupCycles               bool
	// Means over the test cases that recorded them, keyed as in measurement.
	extensionPoints, plugins map[string]*durationOpt
}

// durationOpt is the mean of durations.
type durationOpt struct{ avg, p99 opt }

func addDurations(into *map[string]*durationOpt, from map[string]duration) {
	for k, d := range from {
		if *into == nil {
			*into = map[string]*durationOpt{}
		}
		o := (*into)[k]
		if o == nil {
			o = &durationOpt{}
			(*into)[k] = o
		}
		o.avg.add(d.avg)
		o.p99.add(d.p99)
	}
}

// opt is a mean that may have no samples.
type opt struct {
	sum float64
	n   int
}

func (o *opt) add(v float64) { o.sum += v; o.n++ }

func (o opt) ok() bool { return o.n > 0 }

func (o opt) mean() float64 {
	if o.n == 0 {
		return 0
	}
	return o.sum / float64(o.n)
}

func aggregate(ms []measurement) stats {
	var s stats
	s.ran = len(ms) > 0
	for _, m := range ms {
		if m.hasThroughput {
			s.throughputAvg.add(m.throughputAvg)
			s.throughputP50.add(m.throughputP50)
		}
		if m.hasAttemptP99 {
			s.attemptP99.add(m.attemptP99)
		}
		if m.hasGroupCycles {
			s.placementFeasible.add(m.placementFeasibleAvg)
			s.hasGroupCycles = true
		}
		addDurations(&s.extensionPoints, m.extensionPoints)
		addDurations(&s.plugins, m.plugins)
		if g := m.gangs; g != nil {
			s.gangwatchRuns++
			if g.Finished {
				s.allGangsBound.add(g.AllGangsBoundSeconds)
				if g.WholeGangs > 0 {
					s.completionP50.add(g.GangCompletionSeconds.P50)
					s.completionP99.add(g.GangCompletionSeconds.P99)
				}
			} else {
				s.unfinished++
			}
			s.partial.add(float64(g.PartiallyBoundGangs))
			s.longestPartial.add(g.LongestPartialSeconds)
			s.inOneRack.add(float64(g.GangsInOneRack))
			s.gangs.add(float64(g.ExpectedGangs))
			s.racksPartlyUsed.add(float64(g.RacksPartlyUsed))
			s.racksUsed.add(float64(g.RacksUsed))
			s.racksTotal.add(float64(g.RacksTotal))
		}
	}
	return s
}

// stats returns the scheduler's numbers for a workload and those of the Baseline of the same run;
// run is "" when the scheduler never ran for this workload.
func (r *results) stats(scheduler, workload string) (run string, own, base stats) {
	for _, candidate := range r.runs {
		if ms, ok := r.m[key{candidate, scheduler, workload}]; ok {
			return candidate, aggregate(ms), aggregate(r.m[key{candidate, "Baseline", workload}])
		}
	}
	return "", stats{}, stats{}
}

// ranAnything: the scheduler has results for some workload in this directory.
func (r *results) ranAnything(scheduler string) bool {
	for k := range r.m {
		if k.scheduler == scheduler {
			return true
		}
	}
	return false
}

// honesty lists results that would make the comparison misleading: Native without pod-group
// cycles (its gates did not take effect: the pods were scheduled one by one), a gang scheduler
// that left a gang partly bound or broke a required rack.
func (r *results) honesty() []string {
	var out []string
	keys := make([]key, 0, len(r.m))
	for k := range r.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].workload != keys[j].workload {
			return keys[i].workload < keys[j].workload
		}
		return keys[i].scheduler < keys[j].scheduler
	})
	for _, k := range keys {
		for i, m := range r.m[k] {
			tc := r.testCases[k][i]
			if k.scheduler == "Native" && (m.hasThroughput || m.hasAttemptP99) && !m.hasGroupCycles {
				out = append(out, fmt.Sprintf("%s/%s: no pod-group scheduling cycles recorded - Native did not gang-schedule", tc, k.workload))
			}
			if k.scheduler == "Baseline" || m.gangs == nil {
				continue
			}
			if m.gangs.PartiallyBoundGangs > 0 {
				out = append(out, fmt.Sprintf("%s/%s: gangs stalled partly bound for more than gangwatch's grace: %d (longest %.1f s)",
					tc, k.workload, m.gangs.PartiallyBoundGangs, m.gangs.LongestPartialSeconds))
			}
			if strings.Contains(k.workload, "RackRequired") && m.gangs.GangsInOneRack < m.gangs.ExpectedGangs {
				out = append(out, fmt.Sprintf("%s/%s: only %d of %d gangs inside one rack although required", tc, k.workload, m.gangs.GangsInOneRack, m.gangs.ExpectedGangs))
			}
		}
	}
	return out
}
