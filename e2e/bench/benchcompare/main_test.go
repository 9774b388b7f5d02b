package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		if topic != tc.topic || ok != tc.ok {
			t.Errorf("topicOf(%q) = %q, %v; want %q, %v", tc.file, topic, ok, tc.topic, tc.ok)
		}
	}
}

func TestSchedulerOf(t *testing.T) {
	for tc, want := range map[string]string{
		"Baseline": "Baseline", "BaselineAgain": "Baseline", "Grove": "Grove", "Native": "Native",
		"Coscheduling": "Coscheduling", "CoschedulingLarge": "Coscheduling", "Plain": "",
	} {
		got, ok := schedulerOf(tc)
		if got != want || ok != (want != "") {
			t.Errorf("schedulerOf(%q) = %q, %v; want %q", tc, got, ok, want)
		}
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
		if (err != nil) != tc.err || run != tc.run || tcName != tc.testCase || wl != tc.workload {
			t.Errorf("parseReportName(%q) = %q, %q, %q, %v", tc.name, run, tcName, wl, err)
		}
	}
}

func TestToMillis(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want float64
	}{{2, "ms", 2}, {2, "s", 2000}, {2000, "us", 2}, {3, "", 3}} {
		if got := toMillis(tc.v, tc.unit); got != tc.want {
			t.Errorf("toMillis(%v, %q) = %v, want %v", tc.v, tc.unit, got, tc.want)
		}
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

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
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
		{Name: "compare/BenchmarkPerfScheduling/Grove/" + rack, ExpectedGangs: 47, GangsInOneRack: 47, Finished: true, AllGangsBoundSeconds: 10, RacksUsed: 20, RacksPartlyUsed: 3},
		{Name: "compare/BenchmarkPerfScheduling/Native/" + rack, ExpectedGangs: 47, GangsInOneRack: 40, Finished: true, AllGangsBoundSeconds: 12, RacksUsed: 20, RacksPartlyUsed: 5},
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
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.runs, ","); got != "compare,coscheduling" {
		t.Errorf("runs = %s", got)
	}
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
		if run != tc.wantRun {
			t.Errorf("%s/%s: run %q, want %q", tc.scheduler, tc.workload, run, tc.wantRun)
			continue
		}
		if tc.check != nil {
			if msg := tc.check(own, base); msg != "" {
				t.Errorf("%s/%s: %s; own %+v base %+v", tc.scheduler, tc.workload, msg, own, base)
			}
		}
	}
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
	}{
		{"ratio to the mean baseline", stats{ran: true, throughputAvg: o}, stats{throughputAvg: b}, false, "", []string{"330.0 (1.32×)"}},
		{"baseline row has no ratio", stats{ran: true, throughputAvg: b}, stats{throughputAvg: b}, true, "", []string{"| 250.0 |"}},
		{"no baseline, no ratio", stats{ran: true, throughputAvg: o}, stats{}, false, "", []string{"| 330.0 |"}},
		{"not measured", stats{ran: true}, stats{}, false, "", []string{"| – |"}},
		{"missing", stats{}, stats{}, false, notSupported, []string{"| not supported | not supported |"}},
		{"unfinished", stats{ran: true, unfinished: 1, gangwatchRuns: 1}, stats{}, false, "", []string{"unfinished (1 of 1 runs hit the deadline)"}},
		{"no ratio to an unfinished baseline", stats{ran: true, allGangsBound: o}, stats{allGangsBound: b, unfinished: 1}, false, "", []string{"| 330.0 |"}},
	} {
		got := row("X", tc.own, tc.base, tc.isBase, tc.missing)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: row %q lacks %q", tc.name, got, w)
			}
		}
	}
}

func TestRenderAndHonesty(t *testing.T) {
	r, err := load(testDir(t))
	if err != nil {
		t.Fatal(err)
	}
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
		"| Grove | 150.0 (0.50×) | 150.0 (0.50×) | – | 10.0 | 0 of 47 (longest 0.0 s) | 47 of 47 | 3 of 20 |",
		"Native/500Nodes_RackRequired_47GangsOf64: no pod-group scheduling cycles recorded",
		"Native/500Nodes_RackRequired_47GangsOf64: only 40 of 47 gangs inside one rack",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Plain") {
		t.Errorf("RESULTS.md shows a test case that is not compared:\n%s", md)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	out := render(r, machine{cores: 2, cpu: "test", date: "d", commit: "c", command: "make bench-compare BENCH_COMPARE_ROUNDS=2"})
	for _, want := range []string{
		"compare (2 rounds)",
		"| Grove | 300.0 (1.00×) | 300.0 (1.00×) | – | 15.0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, out)
		}
	}
}
