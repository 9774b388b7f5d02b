// Package perfdata reads the JSON results scheduler_perf writes
// (BenchmarkPerfScheduling_benchmark_<topic>_*.json), for the bench result tools (benchratio,
// benchcompare).
package perfdata

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// DataItem is one measurement: a metric for one workload, with its buckets (Average, Perc50,
// Perc90, Perc95, Perc99) in Unit.
type DataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

// DataItems is a scheduler_perf result file.
type DataItems struct {
	Version   string     `json:"version"`
	DataItems []DataItem `json:"dataItems"`
}

// Metric is the item's metric name (e.g. SchedulingThroughput,
// scheduler_scheduling_attempt_duration_seconds).
func (d DataItem) Metric() string { return d.Labels["Metric"] }

// Names splits the item's Name label, "BenchmarkPerfScheduling/<test case>/<workload>/<namespace
// or collector name>", into test case and workload.
func (d DataItem) Names() (testCase, workload string, err error) {
	parts := strings.Split(d.Labels["Name"], "/")
	if len(parts) < 3 || parts[1] == "" || parts[2] == "" {
		return "", "", fmt.Errorf("unexpected data item name %q", d.Labels["Name"])
	}
	return parts[1], parts[2], nil
}

// Read parses one result file.
func Read(path string) (DataItems, error) {
	var items DataItems
	data, err := os.ReadFile(path)
	if err != nil {
		return items, err
	}
	if err := json.Unmarshal(data, &items); err != nil {
		return items, fmt.Errorf("%s: %w", path, err)
	}
	return items, nil
}

// Throughput is one workload's SchedulingThroughput in pods/s.
type Throughput struct {
	TestCase, Workload string
	// Nodes is the leading "<n>Nodes" of the workload name.
	Nodes           string
	Average, Perc50 float64
}

// Throughputs returns the file's SchedulingThroughput items in the order they ran.
func Throughputs(items DataItems) ([]Throughput, error) {
	var out []Throughput
	for _, item := range items.DataItems {
		if item.Metric() != "SchedulingThroughput" {
			continue
		}
		tc, wl, err := item.Names()
		if err != nil {
			return nil, err
		}
		out = append(out, Throughput{TestCase: tc, Workload: wl, Nodes: strings.SplitN(wl, "_", 2)[0],
			Average: item.Data["Average"], Perc50: item.Data["Perc50"]})
	}
	return out, nil
}

// Stuck is the StuckGangs workload's report (e2e/bench stuck_test.go, stuck_*.json): the
// scheduler's unschedulable attempts — the stuck gangs' members' — over Seconds, while plain
// pods were created and bound and a while after.
type Stuck struct {
	Name             string  `json:"name"`
	Gangs            int     `json:"gangs"`
	Seconds          float64 `json:"seconds"`
	Attempts         float64 `json:"attempts"`
	PerGangPerMinute float64 `json:"perGangPerMinute"`
}
