// benchratio prints the SchedulingThroughput of every scheduler_perf workload in the JSON files
// it is given, in the order they ran, and the ratio of each gang workload to its baseline: the
// mean of the nearest Plain* workload (kube-scheduler's default profile on plain pods) with the
// same node count before it and after it. A shared machine's load drifts during a run; the
// neighbouring baselines track it.
//
//	go run ./e2e/bench/benchratio results/tmp/bench/BenchmarkPerfScheduling_benchmark_grove_*.json
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ai-dynamo/grove/e2e/bench/internal/perfdata"
)

type result = perfdata.Throughput

func baseline(r result) bool { return strings.HasPrefix(r.TestCase, "Plain") }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchratio FILE.json...")
		os.Exit(2)
	}
	ratios := map[string][]float64{}
	var order []string
	for _, path := range os.Args[1:] {
		fmt.Println(path)
		for name, ratio := range printRun(path) {
			if _, seen := ratios[name]; !seen {
				order = append(order, name)
			}
			ratios[name] = append(ratios[name], ratio)
		}
	}
	if len(os.Args) > 2 {
		// Several runs: the median ratio per workload.
		sort.Strings(order)
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "workload\truns\tmedian ratio\tratios\t")
		for _, name := range order {
			rs := ratios[name]
			sort.Float64s(rs)
			med := rs[len(rs)/2]
			if len(rs)%2 == 0 {
				med = (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
			}
			var all []string
			for _, r := range rs {
				all = append(all, fmt.Sprintf("%.2f", r))
			}
			fmt.Fprintf(w, "%s\t%d\t%.2fx\t%s\t\n", name, len(rs), med, strings.Join(all, " "))
		}
		if err := w.Flush(); err != nil {
			fail(err)
		}
	}
}

// printRun prints one run's table and returns each gang workload's ratio to its baseline.
func printRun(path string) map[string]float64 {
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
	out := map[string]float64{}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload (in run order)\tpods/s (average)\tpods/s (p50)\tbaseline pods/s\tratio\t")
	for i, r := range results {
		if baseline(r) {
			fmt.Fprintf(w, "%s/%s\t%.1f\t%.1f\t\t\t\n", r.TestCase, r.Workload, r.Average, r.Perc50)
			continue
		}
		base, ratio := "n/a", "n/a"
		if b, ok := neighbourBaseline(results, i); ok {
			base, ratio = fmt.Sprintf("%.1f", b), fmt.Sprintf("%.2fx", r.Average/b)
			out[r.TestCase+"/"+r.Workload] = r.Average / b
		}
		fmt.Fprintf(w, "%s/%s\t%.1f\t%.1f\t%s\t%s\t\n", r.TestCase, r.Workload, r.Average, r.Perc50, base, ratio)
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
	return out
}

// neighbourBaseline is the mean of the nearest baselines of the same node count before and
// after results[i] (one of them if only one exists).
func neighbourBaseline(results []result, i int) (float64, bool) {
	var sum float64
	n := 0
	for j := i - 1; j >= 0; j-- {
		if baseline(results[j]) && results[j].Nodes == results[i].Nodes {
			sum += results[j].Average
			n++
			break
		}
	}
	for j := i + 1; j < len(results); j++ {
		if baseline(results[j]) && results[j].Nodes == results[i].Nodes {
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchratio:", err)
	os.Exit(1)
}
