// benchratio prints the SchedulingThroughput of every scheduler_perf workload found in the JSON
// files it is given and its ratio to the baseline of the same node count from the same files:
// the mean of the Plain workloads (kube-scheduler's default profile), which a run measures before
// and after the gang workloads.
//
//	go run ./e2e/bench/benchratio results/BenchmarkPerfScheduling_benchmark_grove_*.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
)

type dataItems struct {
	DataItems []struct {
		Data   map[string]float64 `json:"data"`
		Unit   string             `json:"unit"`
		Labels map[string]string  `json:"labels"`
	} `json:"dataItems"`
}

type result struct {
	name            string // "<test case>/<workload>"
	nodes           string // leading "<n>Nodes" of the workload name
	average, perc50 float64
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchratio FILE.json...")
		os.Exit(2)
	}
	var results []result
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		var items dataItems
		if err := json.Unmarshal(data, &items); err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		for _, item := range items.DataItems {
			if item.Labels["Metric"] != "SchedulingThroughput" {
				continue
			}
			// Name is "BenchmarkPerfScheduling/<test case>/<workload>/<namespace>".
			parts := strings.Split(item.Labels["Name"], "/")
			if len(parts) < 3 {
				fail(fmt.Errorf("%s: unexpected data item name %q", path, item.Labels["Name"]))
			}
			results = append(results, result{name: parts[1] + "/" + parts[2], nodes: strings.SplitN(parts[2], "_", 2)[0],
				average: item.Data["Average"], perc50: item.Data["Perc50"]})
		}
	}
	if len(results) == 0 {
		fail(fmt.Errorf("no SchedulingThroughput data items in %v", os.Args[1:]))
	}
	sort.SliceStable(results, func(i, j int) bool { return results[i].name < results[j].name })
	sums, counts := map[string]float64{}, map[string]int{}
	for _, r := range results {
		if strings.HasPrefix(r.name, "Plain") {
			sums[r.nodes] += r.average
			counts[r.nodes]++
		}
	}
	baseline := map[string]float64{}
	for nodes, sum := range sums {
		baseline[nodes] = sum / float64(counts[nodes])
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload\tpods/s (average)\tpods/s (p50)\tratio to baseline (average)\t")
	for _, r := range results {
		ratio := "n/a"
		if b := baseline[r.nodes]; b > 0 {
			ratio = fmt.Sprintf("%.2fx", r.average/b)
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%s\t\n", r.name, r.average, r.perc50, ratio)
	}
	for _, nodes := range sortedKeys(baseline) {
		fmt.Fprintf(w, "baseline %s (mean of %d Plain runs)\t%.1f\t\t\t\n", nodes, counts[nodes], baseline[nodes])
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}

func sortedKeys(m map[string]float64) []string {
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
