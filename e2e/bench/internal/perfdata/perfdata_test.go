package perfdata

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name, testCase, workload string
		err                      bool
	}{
		{"BenchmarkPerfScheduling/Grove/500Nodes_3000Pods_GangsOf4/pods", "Grove", "500Nodes_3000Pods_GangsOf4", false},
		{"BenchmarkPerfScheduling/Plain/500Nodes_3000Pods", "Plain", "500Nodes_3000Pods", false},
		{"BenchmarkPerfScheduling/Plain", "", "", true},
		{"BenchmarkPerfScheduling//x/ns", "", "", true},
		{"", "", "", true},
	} {
		tcName, wl, err := DataItem{Labels: map[string]string{"Name": tc.name}}.Names()
		if (err != nil) != tc.err || tcName != tc.testCase || wl != tc.workload {
			t.Errorf("Names(%q) = %q, %q, %v", tc.name, tcName, wl, err)
		}
	}
}

func TestReadThroughputs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	data := `{"version":"v1","dataItems":[
	 {"data":{"Average":300,"Perc50":290},"unit":"pods/s","labels":{"Metric":"SchedulingThroughput","Name":"BenchmarkPerfScheduling/Plain/500Nodes_3000Pods/plain-0"}},
	 {"data":{"Perc99":12},"unit":"ms","labels":{"Metric":"scheduler_scheduling_attempt_duration_seconds","Name":"BenchmarkPerfScheduling/Plain/500Nodes_3000Pods/plain-0","result":"scheduled"}},
	 {"data":{"Average":250,"Perc50":240},"unit":"pods/s","labels":{"Metric":"SchedulingThroughput","Name":"BenchmarkPerfScheduling/Gang/5000Nodes_1875Gangs_of_8/gangs-0"}}]}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	items, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Throughputs(items)
	if err != nil {
		t.Fatal(err)
	}
	want := []Throughput{
		{TestCase: "Plain", Workload: "500Nodes_3000Pods", Nodes: "500Nodes", Average: 300, Perc50: 290},
		{TestCase: "Gang", Workload: "5000Nodes_1875Gangs_of_8", Nodes: "5000Nodes", Average: 250, Perc50: 240},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Read of a missing file: want an error")
	}
}

func TestPlacementOf(t *testing.T) {
	racks := []string{"r0", "r1", "r2"}
	for _, tc := range []struct {
		name string
		pods []BoundPod
		want Placement
	}{
		{"spread evenly, one rack each", []BoundPod{{"g0", "r0"}, {"g0", "r0"}, {"g1", "r1"}, {"g2", "r2"}, {"g3", "r0"}},
			Placement{Gangs: 4, GangsInOneRack: 4, Racks: 3, RacksUsed: 3, GangsPerRackMin: 1, GangsPerRackMax: 2, Skew: 1}},
		{"packed: an empty rack counts 0", []BoundPod{{"g0", "r0"}, {"g1", "r0"}, {"g2", "r0"}},
			Placement{Gangs: 3, GangsInOneRack: 3, Racks: 3, RacksUsed: 1, GangsPerRackMin: 0, GangsPerRackMax: 3, Skew: 3}},
		{"a gang across racks counts in each", []BoundPod{{"g0", "r0"}, {"g0", "r1"}, {"g1", "r2"}},
			Placement{Gangs: 2, GangsInOneRack: 1, Racks: 3, RacksUsed: 3, GangsPerRackMin: 1, GangsPerRackMax: 1, Skew: 0}},
		{"nothing bound", nil, Placement{Racks: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlacementOf("", racks, tc.pods); got != tc.want {
				t.Errorf("PlacementOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
