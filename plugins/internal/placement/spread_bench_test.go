package placement

import (
	"fmt"
	"testing"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// spreadBench is the question the spread benchmark workload asks of every gang: a gang of 8
// required in one rack, its replica spread preferred over racks of 25 four-core nodes (maxSkew
// 1), with others replicas of 8 pods already placed, round robin, one rack each.
func spreadBench(nodes, others int) Input {
	racks := map[string][]int64{}
	for i := 0; i < nodes; i++ {
		r := fmt.Sprintf("r%03d", i/25)
		racks[r] = append(racks[r], 4)
	}
	list := cluster(racks)
	spread := Spread{Key: rackKey, MaxSkew: 1}
	for o := 0; o < others; o++ {
		rack := o % (nodes / 25)
		m := SpreadMember{Gang: fmt.Sprintf("gang-%d", o)}
		for k := 0; k < 8; k++ {
			m.Nodes = append(m.Nodes, list[rack*25+(o/(nodes/25)+k)%25].Name)
		}
		spread.Others = append(spread.Others, m)
	}
	spec := v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 8}}}
	return Input{Tree: NewTree(&spec), Nodes: list, Spread: []Spread{spread}, Index: NewIndex(list),
		Demand: map[string]capacity.Demand{"w": {Group: "w", Shape: capacity.Resources{MilliCPU: 100, Memory: 500 << 20, Pods: 1}, Count: 8}}}
}

// withoutSpread is the same gang without its spread (the rack-required workload): the cost
// the spread adds is the difference.
func withoutSpread(in Input) (*Plan, *Unfit) {
	in.Spread = nil
	return Choose(in)
}

// BenchmarkChooseSpread plans one gang of the spread workload, halfway through it (the racks
// hold one replica more or less than each other), as the topology plugin does: with the index
// it keeps across gangs. "before" is the choice as it was before it counted through the index
// (spread_before_test.go), "withoutSpread" the gang without its spread: compare them as ratios.
func BenchmarkChooseSpread(b *testing.B) {
	for _, size := range []struct{ nodes, others int }{{500, 190}, {5000, 950}} {
		in := spreadBench(size.nodes, size.others)
		for _, choice := range []struct {
			name   string
			choose func(Input) (*Plan, *Unfit)
		}{{"before", chooseSpreadBefore}, {"now", Choose}, {"withoutSpread", withoutSpread}} {
			b.Run(fmt.Sprintf("%dNodes/%s", size.nodes, choice.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, unfit := choice.choose(in); unfit != nil {
						b.Fatal(unfit)
					}
				}
			})
		}
	}
}
