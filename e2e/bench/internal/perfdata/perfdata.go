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

// Placement is a gang workload's placement when the workload ended (e2e/bench placement_test.go,
// placement_*.json), measured the way bench-compare's gangwatch measures it: racks are the
// values of the nodes' topology.kubernetes.io/rack label.
type Placement struct {
	Name string `json:"name"`
	// Gangs counts the gangs with a bound member; GangsInOneRack those whose bound members all
	// share one rack.
	Gangs          int `json:"gangs"`
	GangsInOneRack int `json:"gangsInOneRack"`
	// Racks counts the cluster's racks, RacksUsed those holding a bound member.
	Racks     int `json:"racks"`
	RacksUsed int `json:"racksUsed"`
	// GangsPerRackMin and GangsPerRackMax are the fewest and most gangs with a member in one
	// rack, over every rack of the cluster (an empty rack counts 0); Skew is their difference,
	// what a replica spread over racks keeps small.
	GangsPerRackMin int `json:"gangsPerRackMin"`
	GangsPerRackMax int `json:"gangsPerRackMax"`
	Skew            int `json:"skew"`
	// PlansHandedOut, PlansStale and PlansRefused count the members whose gang's plan named a
	// node for them during the workload (grove_scheduler_member_plans_total by outcome): handed
	// out, the member filtered that one node and skipped scoring.
	PlansHandedOut float64 `json:"plansHandedOut"`
	PlansStale     float64 `json:"plansStale"`
	PlansRefused   float64 `json:"plansRefused"`
}

// BoundPod is one bound member of a gang: its gang and its node's rack.
type BoundPod struct{ Gang, Rack string }

// PlacementOf measures the placement of pods on a cluster whose racks are racks.
func PlacementOf(name string, racks []string, pods []BoundPod) Placement {
	p := Placement{Name: name}
	gangRacks := map[string]map[string]bool{}
	rackGangs := map[string]map[string]bool{}
	for _, r := range racks {
		rackGangs[r] = map[string]bool{}
	}
	for _, pod := range pods {
		if gangRacks[pod.Gang] == nil {
			gangRacks[pod.Gang] = map[string]bool{}
		}
		gangRacks[pod.Gang][pod.Rack] = true
		if rackGangs[pod.Rack] == nil {
			rackGangs[pod.Rack] = map[string]bool{}
		}
		rackGangs[pod.Rack][pod.Gang] = true
	}
	p.Gangs = len(gangRacks)
	for _, rs := range gangRacks {
		if len(rs) == 1 {
			p.GangsInOneRack++
		}
	}
	p.Racks = len(rackGangs)
	first := true
	for _, gs := range rackGangs {
		n := len(gs)
		if n > 0 {
			p.RacksUsed++
		}
		if first || n < p.GangsPerRackMin {
			p.GangsPerRackMin = n
		}
		if first || n > p.GangsPerRackMax {
			p.GangsPerRackMax = n
		}
		first = false
	}
	p.Skew = p.GangsPerRackMax - p.GangsPerRackMin
	return p
}
