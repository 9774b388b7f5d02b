package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/e2e/bench/gangwatch"
	"github.com/ai-dynamo/grove/e2e/bench/internal/perfdata"
)

func TestTopicOf(t *testing.T) {
	for _, tc := range []struct {
		file, topic string
		ok          bool
	}{
		{"results/BenchmarkPerfScheduling_benchmark_compare_2026-11-22T06:36:04Z.json", "compare", true},
		{"BenchmarkPerfScheduling_benchmark_coscheduling_2026-11-22T06:36:04Z.json", "coscheduling", true},
		{"BenchmarkPerfScheduling_benchmark_my_topic_2026-11-22T06:36:04Z.json", "my_topic", true},
		{"BenchmarkPerfScheduling_benchmark_compare.json", "compare", true},
		{"gangwatch_compare_x.json", "", false},
		{"BenchmarkPerfScheduling_benchmark_compare_x.dat", "", false},
	} {
		topic, ok := topicOf(tc.file)
		assert.Equal(t, tc.topic, topic, tc.file)
		assert.Equal(t, tc.ok, ok, tc.file)
	}
}

func TestSchedulerOf(t *testing.T) {
	for tc, want := range map[string]string{
		"Baseline": "Baseline", "BaselineAgain": "Baseline", "Grove": "Grove", "Native": "Native",
		"Coscheduling": "Coscheduling", "CoschedulingLarge": "Coscheduling", "Plain": "",
	} {
		got, ok := schedulerOf(tc)
		assert.Equal(t, want, got, tc)
		assert.Equal(t, want != "", ok, tc)
	}
}

func TestParseReportName(t *testing.T) {
	for _, tc := range []struct {
		name, run, testCase, workload string
		err                           bool
	}{
		{"compare/BenchmarkPerfScheduling/Grove/500Nodes_3000Pods_GangsOf4", "compare", "Grove", "500Nodes_3000Pods_GangsOf4", false},
		{"BenchmarkPerfScheduling/Coscheduling/500Nodes_3000Pods_GangsOf4", "", "Coscheduling", "500Nodes_3000Pods_GangsOf4", false},
		{"coscheduling_Baseline_500Nodes_3000Pods_GangsOf4", "coscheduling", "Baseline", "500Nodes_3000Pods_GangsOf4", false},
		{"coscheduling_Baseline", "", "", "", true},
		{"compare/BenchmarkPerfScheduling/Grove", "", "", "", true},
		{"something else", "", "", "", true},
		{"", "", "", "", true},
	} {
		run, tcName, wl, err := parseReportName(tc.name)
		if tc.err {
			assert.Error(t, err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, []string{tc.run, tc.testCase, tc.workload}, []string{run, tcName, wl}, tc.name)
	}
}

func TestToMillis(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want float64
	}{{2, "ms", 2}, {2, "s", 2000}, {2000, "us", 2}, {3, "", 3}} {
		assert.Equal(t, tc.want, toMillis(tc.v, tc.unit), "%v %s", tc.v, tc.unit)
	}
}

func item(metric, name string, labels map[string]string, unit string, data map[string]float64) perfdata.DataItem {
	l := map[string]string{"Metric": metric, "Name": name}
	for k, v := range labels {
		l[k] = v
	}
	return perfdata.DataItem{Data: data, Unit: unit, Labels: l}
}

func throughput(tc, wl string, avg, p50 float64) perfdata.DataItem {
	return item("SchedulingThroughput", "BenchmarkPerfScheduling/"+tc+"/"+wl+"/pods", nil, "pods/s",
		map[string]float64{"Average": avg, "Perc50": p50})
}

func attempt(tc, wl string, p99 float64) perfdata.DataItem {
	return item("scheduler_scheduling_attempt_duration_seconds", "BenchmarkPerfScheduling/"+tc+"/"+wl+"/pods",
		map[string]string{"result": "scheduled"}, "ms", map[string]float64{"Perc99": p99})
}

func placementFeasible(tc, wl string, avg float64) perfdata.DataItem {
	return item("scheduler_framework_extension_point_duration_seconds", "BenchmarkPerfScheduling/"+tc+"/"+wl+"/pods",
		map[string]string{"extension_point": "PlacementFeasible"}, "ms", map[string]float64{"Average": avg})
}

func extensionPoint(tc, wl, ep string, avg, p99 float64) perfdata.DataItem {
	return item("scheduler_framework_extension_point_duration_seconds", "BenchmarkPerfScheduling/"+tc+"/"+wl+"/pods",
		map[string]string{"extension_point": ep}, "ms", map[string]float64{"Average": avg, "Perc99": p99})
}

func pluginItem(tc, wl, plugin, ep string, avg, p99 float64) perfdata.DataItem {
	return item("scheduler_plugin_execution_duration_seconds", "BenchmarkPerfScheduling/"+tc+"/"+wl+"/pods",
		map[string]string{"plugin": plugin, "extension_point": ep}, "ms", map[string]float64{"Average": avg, "Perc99": p99})
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// A results directory as make bench-compare leaves it: this module's run (two baselines around
// Grove and Native), the coscheduling module's run (its own baseline; no rack workload), and
// gangwatch reports with and without a topic.
func testDir(t *testing.T) string {
	dir := t.TempDir()
	const w4, rack, cont = "500Nodes_3000Pods_GangsOf4", "500Nodes_RackRequired_47GangsOf64", "500Nodes_Contention_32GangsOf64"
	writeJSON(t, filepath.Join(dir, "BenchmarkPerfScheduling_benchmark_compare_2026-11-22T07:00:00Z.json"), perfdata.DataItems{
		Version: "v1",
		DataItems: []perfdata.DataItem{
			throughput("Baseline", w4, 300, 290), attempt("Baseline", w4, 100),
			throughput("Baseline", rack, 300, 300),
			throughput("Grove", w4, 330, 300), attempt("Grove", w4, 50),
			extensionPoint("Grove", w4, "Filter", 0.5, 2), extensionPoint("Grove", w4, "Permit", 0.02, 0.1),
			pluginItem("Grove", w4, "Gang", "Permit", 0.015, 0.09), pluginItem("Grove", w4, "Topology", "Score", 0.002, 0.01),
			throughput("Grove", rack, 150, 150),
			throughput("Native", w4, 100, 90), attempt("Native", w4, 200), placementFeasible("Native", w4, 0.04),
			throughput("Native", rack, 120, 100), // no pod-group cycles: must be flagged
			throughput("BaselineAgain", w4, 200, 190), attempt("BaselineAgain", w4, 300),
			throughput("BaselineAgain", rack, 300, 300),
			throughput("Plain", w4, 1, 1), // not a compared test case
		},
	})
	writeJSON(t, filepath.Join(dir, "BenchmarkPerfScheduling_benchmark_coscheduling_2026-11-22T07:10:00Z.json"), perfdata.DataItems{
		Version: "v1",
		DataItems: []perfdata.DataItem{
			throughput("Baseline", w4, 400, 400),
			throughput("Coscheduling", w4, 200, 200),
		},
	})
	reports := []gangwatch.Report{
		{Name: "compare/BenchmarkPerfScheduling/Grove/" + cont, ExpectedGangs: 32, Gangs: 32, WholeGangs: 32, Finished: true, AllGangsBoundSeconds: 20, RacksUsed: 20},
		{Name: "compare/BenchmarkPerfScheduling/Baseline/" + cont, ExpectedGangs: 32, Gangs: 32, WholeGangs: 3, Finished: false, PartiallyBoundGangs: 29, RacksUsed: 20},
		{Name: "compare/BenchmarkPerfScheduling/BaselineAgain/" + cont, ExpectedGangs: 32, Gangs: 32, WholeGangs: 32, Finished: true, AllGangsBoundSeconds: 40, PartiallyBoundGangs: 2, RacksUsed: 20},
		{Name: "compare/BenchmarkPerfScheduling/Grove/" + rack, ExpectedGangs: 47, GangsInOneRack: 47, Finished: true, AllGangsBoundSeconds: 10, RacksTotal: 20, RacksUsed: 4, RacksPartlyUsed: 3},
		{Name: "compare/BenchmarkPerfScheduling/Native/" + rack, ExpectedGangs: 47, GangsInOneRack: 40, Finished: true, AllGangsBoundSeconds: 12, RacksTotal: 20, RacksUsed: 5, RacksPartlyUsed: 5},
		{Name: "coscheduling_Coscheduling_" + w4, ExpectedGangs: 750, Finished: true, AllGangsBoundSeconds: 15},
		{Name: "BenchmarkPerfScheduling/Native/" + w4, ExpectedGangs: 750, Finished: true, AllGangsBoundSeconds: 25},
	}
	for i, r := range reports {
		writeJSON(t, filepath.Join(dir, "gangwatch_"+string(rune('a'+i))+".json"), r)
	}
	return dir
}

func TestLoadAndStats(t *testing.T) {
	r, err := load(testDir(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"compare", "coscheduling"}, r.runs)
	for _, tc := range []struct {
		scheduler, workload string
		wantRun             string
		check               func(own, base stats) string
	}{
		{"Grove", "500Nodes_3000Pods_GangsOf4", "compare", func(own, base stats) string {
			// The baseline is the mean of Baseline and BaselineAgain; Plain is ignored.
			if base.throughputAvg.mean() != 250 || base.attemptP99.mean() != 200 || own.throughputAvg.mean() != 330 {
				return "want Grove 330 pods/s against a 250 pods/s baseline with 200 ms p99"
			}
			return ""
		}},
		{"Coscheduling", "500Nodes_3000Pods_GangsOf4", "coscheduling", func(own, base stats) string {
			// Its own run's baseline, not this module's.
			if base.throughputAvg.mean() != 400 || own.allGangsBound.mean() != 15 {
				return "want coscheduling's own 400 pods/s baseline and its gangwatch report"
			}
			return ""
		}},
		{"Native", "500Nodes_3000Pods_GangsOf4", "compare", func(own, _ stats) string {
			if !own.hasGroupCycles || own.placementFeasible.mean() != 0.04 {
				return "want Native's pod-group cycles"
			}
			if own.allGangsBound.mean() != 25 {
				return "want the gangwatch report named without a topic attached to the compare run"
			}
			return ""
		}},
		{"Baseline", "500Nodes_Contention_32GangsOf64", "compare", func(own, _ stats) string {
			if own.unfinished != 1 || own.gangwatchRuns != 2 || own.allGangsBound.mean() != 40 || own.partial.mean() != 15.5 {
				return "want one unfinished baseline run out of two, 15.5 partial gangs on average"
			}
			return ""
		}},
		{"Coscheduling", "500Nodes_RackRequired_47GangsOf64", "", nil},
	} {
		run, own, base := r.stats(tc.scheduler, tc.workload)
		if !assert.Equal(t, tc.wantRun, run, "%s/%s", tc.scheduler, tc.workload) {
			continue
		}
		if tc.check != nil {
			assert.Empty(t, tc.check(own, base), "%s/%s: own %+v base %+v", tc.scheduler, tc.workload, own, base)
		}
	}
}

// mean is an opt holding the given samples.
func mean(vs ...float64) opt {
	var o opt
	for _, v := range vs {
		o.add(v)
	}
	return o
}

func TestRowRatios(t *testing.T) {
	var o, b opt
	o.add(330)
	b.add(300)
	b.add(200)
	for _, tc := range []struct {
		name    string
		own     stats
		base    stats
		isBase  bool
		missing string
		want    []string
		notWant []string
	}{
		{"ratio to the mean baseline", stats{ran: true, throughputAvg: o}, stats{throughputAvg: b}, false, "", []string{"330.0 (1.32×)"}, nil},
		{"baseline row has no ratio", stats{ran: true, throughputAvg: b}, stats{throughputAvg: b}, true, "", []string{"| 250.0 |"}, nil},
		{"no baseline, no ratio", stats{ran: true, throughputAvg: o}, stats{}, false, "", []string{"| 330.0 |"}, nil},
		{"not measured", stats{ran: true}, stats{}, false, "", []string{"| – |"}, nil},
		{"missing", stats{}, stats{}, false, notSupported, []string{"| not supported | not supported |"}, nil},
		{"unfinished", stats{ran: true, unfinished: 1, gangwatchRuns: 1}, stats{}, false, "", []string{"unfinished (1 of 1 runs hit the deadline)"}, nil},
		{"no ratio to an unfinished baseline", stats{ran: true, allGangsBound: o}, stats{allGangsBound: b, unfinished: 1}, false, "", []string{"| 330.0 |"}, nil},
		{"gang completion with ratios", stats{ran: true, completionP50: mean(3), completionP99: mean(6)}, stats{completionP50: mean(2), completionP99: mean(3)},
			false, "", []string{"| 3.0 (1.50×) | 6.0 (2.00×) |"}, nil},
		{"no completion ratio to an unfinished baseline", stats{ran: true, completionP50: mean(3), completionP99: mean(6)},
			stats{completionP50: mean(2), completionP99: mean(3), unfinished: 1}, false, "", []string{"| 3.0 | 6.0 |"}, nil},
		{"own unfinished runs: completion of the finished ones, no ratio",
			stats{ran: true, unfinished: 1, gangwatchRuns: 2, completionP50: mean(3), completionP99: mean(6)},
			stats{completionP50: mean(2), completionP99: mean(3)}, false, "",
			[]string{"| 3.0 (1 run that finished) | 6.0 (1 run that finished) |"}, []string{"1.50×"}},
		{"racks used of all, with ratios", stats{ran: true, gangs: mean(100), inOneRack: mean(100), racksUsed: mean(17), racksTotal: mean(20), racksPartlyUsed: mean(17)},
			stats{gangs: mean(100), inOneRack: mean(0), racksUsed: mean(20), racksTotal: mean(20), racksPartlyUsed: mean(20)}, false, "",
			[]string{"| 100 of 100 | 17 of 20 (0.85×) | 17 of 17 (0.85×) |"}, nil},
		{"no ratio to a baseline's 0 partial gangs", stats{ran: true, gangs: mean(47), partial: mean(1), longestPartial: mean(6)},
			stats{gangs: mean(47), partial: mean(0)}, false, "", []string{"| 1 of 47; longest 6.0 s |"}, nil},
		{"partial gangs ratio under contention", stats{ran: true, gangs: mean(32), partial: mean(2), longestPartial: mean(6)},
			stats{gangs: mean(32), partial: mean(8)}, false, "", []string{"| 2 of 32 (0.25×); longest 6.0 s |"}, nil},
		{"run-to-completion: no racks", stats{ran: true, racksUsed: mean(0), racksTotal: mean(20), racksPartlyUsed: mean(0)}, stats{}, false, "",
			[]string{"| – | – |"}, []string{"0 of 20"}},
		{"reports without the rack total", stats{ran: true, racksUsed: mean(4), racksPartlyUsed: mean(4)}, stats{}, false, "",
			[]string{"| 4 | 4 of 4 |"}, nil},
	} {
		got := row("X", tc.own, tc.base, tc.isBase, tc.missing)
		for _, w := range tc.want {
			assert.Contains(t, got, w, tc.name)
		}
		for _, w := range tc.notWant {
			assert.NotContains(t, got, w, tc.name)
		}
	}
}

func TestRenderAndHonesty(t *testing.T) {
	r, err := load(testDir(t))
	require.NoError(t, err)
	md := render(r, machine{cores: 2, cpu: "Test CPU", date: "today", commit: "abc", command: "make bench-compare"})
	for _, want := range []string{
		"2 cores (runtime.NumCPU), Test CPU",
		"`make bench-compare`",
		"## 500Nodes_3000Pods_GangsOf4",
		"| Grove | 330.0 (1.32×) | 300.0 (1.25×) | 50.0 (0.25×) |",
		"| Baseline (coscheduling run) | 400.0 |",
		"| Coscheduling | 200.0 (0.50×) |",
		"Native ran pod-group scheduling cycles (PlacementFeasible recorded, mean 0.040 ms)",
		"| Coscheduling | not supported |",
		"| Grove | 150.0 (0.50×) | 150.0 (0.50×) | – | 10.0 | – | – | 0 of 47; longest 0.0 s | 47 of 47 | 4 of 20 | 3 of 4 |",
		"Native/500Nodes_RackRequired_47GangsOf64: no pod-group scheduling cycles recorded",
		"Native/500Nodes_RackRequired_47GangsOf64: only 40 of 47 gangs inside one rack",
		"Where the time goes, Grove: extension points Filter 0.500 ms (p99 2.00), Permit 0.020 ms (p99 0.100); " +
			"plugins Gang/Permit 0.015 ms (p99 0.090), Topology/Score (per node) 0.002 ms (p99 0.010).",
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "Plain", "a test case that is not compared")
}

// make bench-compare BENCH_COMPARE_ROUNDS=2 leaves two result files per topic and a second
// gangwatch report per workload: every value is the mean over the rounds, and the header says
// how many rounds each run had.
func TestRoundsAreAveraged(t *testing.T) {
	dir := t.TempDir()
	const w = "500Nodes_3000Pods_GangsOf4"
	for i, grove := range []float64{200, 400} {
		writeJSON(t, filepath.Join(dir, "BenchmarkPerfScheduling_benchmark_compare_2026-11-22T07:0"+string(rune('0'+i))+":00Z.json"), perfdata.DataItems{
			Version:   "v1",
			DataItems: []perfdata.DataItem{throughput("Baseline", w, 300, 300), throughput("Grove", w, grove, grove)},
		})
	}
	for _, f := range []string{"gangwatch_x.json", "gangwatch_x_2.json"} {
		bound := 10.0
		if f != "gangwatch_x.json" {
			bound = 20
		}
		writeJSON(t, filepath.Join(dir, f), gangwatch.Report{Name: "compare/BenchmarkPerfScheduling/Grove/" + w,
			ExpectedGangs: 750, WholeGangs: 750, Finished: true, AllGangsBoundSeconds: bound})
	}
	r, err := load(dir)
	require.NoError(t, err)
	out := render(r, machine{cores: 2, cpu: "test", date: "d", commit: "c", command: "make bench-compare BENCH_COMPARE_ROUNDS=2"})
	for _, want := range []string{
		"compare (2 rounds)",
		"| Grove | 300.0 (1.00×) | 300.0 (1.00×) | – | 15.0 |",
	} {
		assert.Contains(t, out, want)
	}
}

func TestAddPerfDurations(t *testing.T) {
	const w = "500Nodes_3008Pods_GangsOf64"
	for _, tc := range []struct {
		name      string
		items     []perfdata.DataItem
		extPoints map[string]duration
		plugins   map[string]duration
		groups    bool
	}{
		{"none", []perfdata.DataItem{throughput("Grove", w, 1, 1)}, nil, nil, false},
		{"extension points and plugins", []perfdata.DataItem{
			extensionPoint("Grove", w, "Filter", 1, 3),
			pluginItem("Grove", w, "Topology", "PreScore", 0.5, 2),
			item("scheduler_plugin_execution_duration_seconds", "BenchmarkPerfScheduling/Grove/"+w+"/pods",
				map[string]string{"plugin": "Gang"}, "ms", map[string]float64{"Average": 9}), // no extension point: ignored
		}, map[string]duration{"Filter": {1, 3}}, map[string]duration{"Topology/PreScore": {0.5, 2}}, false},
		{"seconds become ms", []perfdata.DataItem{
			item("scheduler_plugin_execution_duration_seconds", "BenchmarkPerfScheduling/Grove/"+w+"/pods",
				map[string]string{"plugin": "Gang", "extension_point": "Permit"}, "s", map[string]float64{"Average": 0.001, "Perc99": 0.002}),
		}, nil, map[string]duration{"Gang/Permit": {1, 2}}, false},
		{"PlacementFeasible is also a group-cycle sign", []perfdata.DataItem{extensionPoint("Native", w, "PlacementFeasible", 0.004, 0.01)},
			map[string]duration{"PlacementFeasible": {0.004, 0.01}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResults()
			require.NoError(t, r.addPerf("compare", perfdata.DataItems{DataItems: tc.items}))
			var m measurement
			for k, ms := range r.m {
				require.Len(t, ms, 1, "%v", k)
				m = ms[0]
			}
			assert.Equal(t, tc.extPoints, m.extensionPoints)
			assert.Equal(t, tc.plugins, m.plugins)
			assert.Equal(t, tc.groups, m.hasGroupCycles)
		})
	}
}

func TestAggregateGangCompletion(t *testing.T) {
	report := func(finished bool, whole int, p50, p99 float64) *gangwatch.Report {
		return &gangwatch.Report{Finished: finished, WholeGangs: whole, ExpectedGangs: 4, RacksTotal: 20, RacksUsed: 5,
			GangCompletionSeconds: gangwatch.Percentiles{P50: p50, P99: p99}}
	}
	for _, tc := range []struct {
		name                 string
		reports              []*gangwatch.Report
		p50, p99             float64
		n, unfinished, total int
	}{
		{"one run", []*gangwatch.Report{report(true, 4, 2, 5)}, 2, 5, 1, 0, 20},
		{"mean over rounds", []*gangwatch.Report{report(true, 4, 2, 5), report(true, 4, 4, 7)}, 3, 6, 2, 0, 20},
		{"unfinished runs left out", []*gangwatch.Report{report(true, 4, 2, 5), report(false, 1, 40, 90)}, 2, 5, 1, 1, 20},
		{"no whole gang: not measured", []*gangwatch.Report{report(true, 0, 0, 0)}, 0, 0, 0, 0, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []measurement
			for _, r := range tc.reports {
				ms = append(ms, measurement{gangs: r})
			}
			s := aggregate(ms)
			assert.Equal(t, tc.n, s.completionP50.n)
			assert.Equal(t, tc.n, s.completionP99.n)
			assert.InDelta(t, tc.p50, s.completionP50.mean(), 1e-9)
			assert.InDelta(t, tc.p99, s.completionP99.mean(), 1e-9)
			assert.Equal(t, tc.unfinished, s.unfinished)
			assert.InDelta(t, float64(tc.total), s.racksTotal.mean(), 1e-9)
		})
	}
}

func TestWhereTimeGoes(t *testing.T) {
	d := func(pairs ...float64) *durationOpt {
		o := &durationOpt{}
		for i := 0; i+1 < len(pairs); i += 2 {
			o.avg.add(pairs[i])
			o.p99.add(pairs[i+1])
		}
		return o
	}
	for _, tc := range []struct {
		name        string
		ext, plugin map[string]*durationOpt
		want        string
	}{
		{"no data", nil, nil, ""},
		{"zero means are no data", map[string]*durationOpt{"Filter": d(0, 0)}, nil, ""},
		{"top three by mean, with p99", map[string]*durationOpt{
			"Filter": d(0.5, 2), "Score": d(0.3, 1), "PreFilter": d(0.1, 0.4), "Reserve": d(0.01, 0.05),
		}, nil, "extension points Filter 0.500 ms (p99 2.00), Score 0.300 ms (p99 1.00), PreFilter 0.100 ms (p99 0.400)."},
		{"largest p99 outside the top three", map[string]*durationOpt{
			"Filter": d(0.5, 2), "Score": d(0.3, 1), "PreFilter": d(0.1, 0.4), "Permit": d(0.05, 25),
		}, nil, "extension points Filter 0.500 ms (p99 2.00), Score 0.300 ms (p99 1.00), PreFilter 0.100 ms (p99 0.400); largest p99 Permit 25.0 ms (mean 0.050)."},
		{"binding cycle apart: Bind last, PreBind and PostBind left out", map[string]*durationOpt{
			"Filter": d(0.5, 2), "Bind": d(40, 100), "PreBind": d(5, 9), "PostBind": d(1, 2),
		}, map[string]*durationOpt{"DefaultBinder/Bind": d(40, 22), "Gang/PostBind": d(1, 2), "Gang/PreFilter": d(0.1, 0.2)},
			"extension points Filter 0.500 ms (p99 2.00); plugins Gang/PreFilter 0.100 ms (p99 0.200); binding: Bind 40.0 ms (p99 100)."},
		{"plugins: Filter and Score per node, mean over rounds", nil, map[string]*durationOpt{
			"Topology/Score": d(0.002, 0.01, 0.004, 0.03), "Gang/PreFilter": d(1.5, 12), "NodeResourcesFit/Filter": d(0.001, 0.002),
		}, "plugins Gang/PreFilter 1.50 ms (p99 12.0), Topology/Score (per node) 0.003 ms (p99 0.020), NodeResourcesFit/Filter (per node) 0.001 ms (p99 0.002)."},
		{"p99 beyond the top bucket", map[string]*durationOpt{"Filter": d(30, 204.8), "Bind": d(4480, 204.8)},
			map[string]*durationOpt{"DRA/PreEnqueue": d(1.64, 22.17)},
			"extension points Filter 30.0 ms (p99 ≥205); plugins DRA/PreEnqueue 1.64 ms (p99 ≥22.2); binding: Bind 4480 ms (p99 ≥205)."},
		{"both", map[string]*durationOpt{"Permit": d(0.02, 0.1)}, map[string]*durationOpt{"Gang/Permit": d(0.015, 0.09)},
			"extension points Permit 0.020 ms (p99 0.100); plugins Gang/Permit 0.015 ms (p99 0.090)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, whereTimeGoes(stats{extensionPoints: tc.ext, plugins: tc.plugin}))
		})
	}
}

func TestMs(t *testing.T) {
	for v, want := range map[float64]string{0.0123: "0.012", 1.234: "1.23", 12.34: "12.3", 123.4: "123"} {
		assert.Equal(t, want, ms(v))
	}
}
