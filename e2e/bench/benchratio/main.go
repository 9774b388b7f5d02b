// benchratio prints the SchedulingThroughput of every scheduler_perf workload in the JSON files
// it is given (one file per round), in the order they ran, and for each workload:
//
//   - its ratio to its baseline: the mean of the nearest Plain* workload (kube-scheduler's
//     default profile on plain pods) with the same node count before it and after it — a shared
//     machine's load drifts during a run, the neighbouring baselines track it. StuckGangs
//     (plain pods while unplaceable gangs wait) is compared with its GroveNoStuck* neighbours
//     instead (Grove's profile on the same pods without them);
//   - its fraction of the bind limit: the mean of the run's BindLimit* workloads of the same
//     node count (the same pods through a profile that does no Filter or Score work).
//
// It also prints the stuck gangs' attempts per gang per minute from the stuck_*.json reports
// next to the files (e2e/bench stuck_test.go), and each gang workload's placement over the racks
// from the placement_*.json reports (placement_test.go). With several files, it ends with each figure's
// median over the rounds.
//
//	go run ./e2e/bench/benchratio results/tmp/bench/BenchmarkPerfScheduling_benchmark_grove_*.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ai-dynamo/grove/e2e/bench/internal/perfdata"
)

type result = perfdata.Throughput

// Reference workloads, by test case prefix.
const (
	plainPrefix   = "Plain"
	bindPrefix    = "BindLimit"
	noStuckPrefix = "GroveNoStuck"
	stuckCase     = "StuckGangs"
)

func isReference(r result) bool {
	return strings.HasPrefix(r.TestCase, plainPrefix) || strings.HasPrefix(r.TestCase, bindPrefix) ||
		strings.HasPrefix(r.TestCase, noStuckPrefix)
}

// figures are one round's figures per workload.
type figures struct {
	ratio, ofBindLimit float64
	hasRatio, hasBind  bool
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchratio FILE.json...")
		os.Exit(2)
	}
	ratios, fractions := map[string][]float64{}, map[string][]float64{}
	var order []string
	dirs := map[string]bool{}
	for _, path := range os.Args[1:] {
		dirs[filepath.Dir(path)] = true
		fmt.Println(path)
		for name, f := range printRun(path) {
			if _, seen := ratios[name]; !seen {
				if _, seen := fractions[name]; !seen {
					order = append(order, name)
				}
			}
			if f.hasRatio {
				ratios[name] = append(ratios[name], f.ratio)
			}
			if f.hasBind {
				fractions[name] = append(fractions[name], f.ofBindLimit)
			}
		}
	}
	stuck := printStuck(dirs)
	skews := printPlacement(dirs)
	if len(os.Args) > 2 {
		// Several runs: the median per workload.
		sort.Strings(order)
		fmt.Println("medians over the rounds")
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "workload\truns\tmedian ratio\tratios\tmedian of bind limit\tfractions\t")
		for _, name := range order {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t\n", name, max(len(ratios[name]), len(fractions[name])),
				medianCols(ratios[name], "x"), medianCols(fractions[name], ""))
		}
		if len(stuck) > 0 {
			fmt.Fprintf(w, "%s (attempts per stuck gang per minute)\t%d\t%s\t\t\t\n", stuckCase, len(stuck), medianCols(stuck, ""))
		}
		for _, name := range sortedKeys(skews) {
			fmt.Fprintf(w, "%s (gangs per rack, skew)\t%d\t%s\t\t\t\n", name, len(skews[name]), medianCols(skews[name], ""))
		}
		if err := w.Flush(); err != nil {
			fail(err)
		}
	}
}

func medianCols(vs []float64, unit string) string {
	if len(vs) == 0 {
		return "n/a\t"
	}
	sorted := append([]float64(nil), vs...)
	sort.Float64s(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	var all []string
	for _, v := range vs {
		all = append(all, fmt.Sprintf("%.2f", v))
	}
	return fmt.Sprintf("%.2f%s\t%s", med, unit, strings.Join(all, " "))
}

// printRun prints one run's table and returns each workload's figures.
func printRun(path string) map[string]figures {
	items, err := perfdata.Read(path)
	if err != nil {
		fail(err)
	}
	results, err := perfdata.Throughputs(items)
	if err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	if len(results) == 0 {
		fail(fmt.Errorf("no SchedulingThroughput data items in %s", path))
	}
	out := map[string]figures{}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload (in run order)\tpods/s (average)\tpods/s (p50)\tbaseline pods/s\tratio\tof bind limit\t")
	for i, r := range results {
		name := r.TestCase + "/" + r.Workload
		var f figures
		base, ratio, ofBind := "", "", "n/a"
		if limit, ok := bindLimit(results, r.Nodes); ok {
			f.ofBindLimit, f.hasBind = r.Average/limit, true
			ofBind = fmt.Sprintf("%.2f", f.ofBindLimit)
		}
		if !isReference(r) {
			prefix := plainPrefix
			if r.TestCase == stuckCase {
				prefix = noStuckPrefix
			}
			base, ratio = "n/a", "n/a"
			if b, ok := neighbourBaseline(results, i, prefix); ok {
				f.ratio, f.hasRatio = r.Average/b, true
				base, ratio = fmt.Sprintf("%.1f", b), fmt.Sprintf("%.2fx", f.ratio)
			}
		}
		if f.hasRatio || f.hasBind {
			out[name] = f
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%s\t%s\t%s\t\n", name, r.Average, r.Perc50, base, ratio, ofBind)
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
	return out
}

// bindLimit is the mean of the run's BindLimit workloads with nodes nodes.
func bindLimit(results []result, nodes string) (float64, bool) {
	var sum float64
	n := 0
	for _, r := range results {
		if strings.HasPrefix(r.TestCase, bindPrefix) && r.Nodes == nodes {
			sum += r.Average
			n++
		}
	}
	if n == 0 || sum == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// neighbourBaseline is the mean of the nearest workloads of test case prefix and the same node
// count before and after results[i] (one of them if only one exists).
func neighbourBaseline(results []result, i int, prefix string) (float64, bool) {
	match := func(j int) bool {
		return strings.HasPrefix(results[j].TestCase, prefix) && results[j].Nodes == results[i].Nodes
	}
	var sum float64
	n := 0
	for j := i - 1; j >= 0; j-- {
		if match(j) {
			sum += results[j].Average
			n++
			break
		}
	}
	for j := i + 1; j < len(results); j++ {
		if match(j) {
			sum += results[j].Average
			n++
			break
		}
	}
	if n == 0 || sum == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// printStuck prints the stuck_*.json reports in dirs, oldest first, and returns their
// attempts per gang per minute.
func printStuck(dirs map[string]bool) []float64 {
	var paths []string
	for dir := range dirs {
		found, err := filepath.Glob(filepath.Join(dir, "stuck_*.json"))
		if err != nil {
			fail(err)
		}
		paths = append(paths, found...)
	}
	if len(paths) == 0 {
		return nil
	}
	sort.Strings(paths)
	var out []float64
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "stuck gangs (report)\tgangs\tseconds\tattempts\tper gang per minute\t")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		var s perfdata.Stuck
		if err := json.Unmarshal(data, &s); err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		out = append(out, s.PerGangPerMinute)
		fmt.Fprintf(w, "%s\t%d\t%.1f\t%.0f\t%.2f\t\n", filepath.Base(path), s.Gangs, s.Seconds, s.Attempts, s.PerGangPerMinute)
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
	return out
}

// printPlacement prints the placement_*.json reports in dirs, oldest first, and returns each
// workload's gangs-per-rack skews.
func printPlacement(dirs map[string]bool) map[string][]float64 {
	var paths []string
	for dir := range dirs {
		found, err := filepath.Glob(filepath.Join(dir, "placement_*.json"))
		if err != nil {
			fail(err)
		}
		paths = append(paths, found...)
	}
	if len(paths) == 0 {
		return nil
	}
	// The file names end in the time they were written: sorted by it, rounds stay in order.
	sort.Slice(paths, func(i, j int) bool { return stamp(paths[i]) < stamp(paths[j]) })
	skews := map[string][]float64{}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "gang placement (workload)\tgangs\tin one rack\tracks used\tgangs per rack (min-max)\tskew\tmembers planned (handed out/stale/refused)\t")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		var p perfdata.Placement
		if err := json.Unmarshal(data, &p); err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		name := strings.TrimPrefix(p.Name, "BenchmarkPerfScheduling/")
		skews[name] = append(skews[name], float64(p.Skew))
		fmt.Fprintf(w, "%s\t%d\t%d\t%d of %d\t%d-%d\t%d\t%.0f/%.0f/%.0f\t\n", name, p.Gangs, p.GangsInOneRack, p.RacksUsed, p.Racks,
			p.GangsPerRackMin, p.GangsPerRackMax, p.Skew, p.PlansHandedOut, p.PlansStale, p.PlansRefused)
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
	return skews
}

// stamp is the time at the end of a report's file name (..._20060102T150405.json).
func stamp(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	return base[strings.LastIndex(base, "_")+1:]
}

func sortedKeys(m map[string][]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchratio:", err)
	os.Exit(1)
}
