package preemption

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

func cpu(milli int64) capacity.Resources { return capacity.Resources{MilliCPU: milli, Pods: 1} }

// node is a 1-CPU node in a rack with free milli-CPUs left.
func node(name, rack string, free int64) placement.Node {
	return placement.Node{Name: name, Labels: map[string]string{"rack": rack}, Free: capacity.Resources{MilliCPU: free, Pods: 100}}
}

func unit(key string, prio int32, pods ...VictimPod) Unit {
	return Unit{Key: key, Priority: prio, Pods: pods}
}

func on(node string, milli int64) VictimPod { return VictimPod{Node: node, Shape: cpu(milli)} }

func pods(n int64) capacity.Demands {
	return capacity.Demands{{Group: "w", Shape: cpu(1000), Count: n}}
}

func rackGang(n int32) *placement.Tree {
	return placement.NewTree(&v1alpha1.PodGangSpec{
		TopologyConstraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To("rack")}},
		PodGroups:          []v1alpha1.PodGroup{{Name: "w", MinReplicas: n}},
	})
}

// sharedRackGang is a scaled PodGang of a PodCliqueSet replica whose PodGangs share one rack.
func sharedRackGang(n int32) *placement.Tree {
	return placement.NewTree(&v1alpha1.PodGangSpec{
		SharedTopologyConstraint: &v1alpha1.SharedTopologyConstraint{Group: "replica-0", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To("rack")}},
		PodGroups:                []v1alpha1.PodGroup{{Name: "w", MinReplicas: n}},
	})
}

func TestSelect(t *testing.T) {
	full := func(names ...string) []placement.Node {
		racks := map[string]string{"n0": "r1", "n1": "r1", "n2": "r2", "n3": "r2"}
		var out []placement.Node
		for _, n := range names {
			out = append(out, node(n, racks[n], 0))
		}
		return out
	}
	now := time.Now()
	tests := []struct {
		name    string
		problem Problem
		want    []string
		domain  string
		outcome Outcome
	}{
		{
			name:    "room is there already: nothing is evicted",
			problem: Problem{Nodes: append(full("n0"), node("n1", "r1", 1000)), Demand: pods(1), Units: []Unit{unit("a", 1, on("n0", 1000))}},
			outcome: FitsAlready,
		},
		{
			name: "the lower-priority gang goes, whole",
			problem: Problem{Nodes: full("n0", "n1", "n2", "n3"), Demand: pods(2), Units: []Unit{
				unit("gang-10", 10, on("n0", 1000), on("n1", 1000)),
				unit("gang-5", 5, on("n2", 1000), on("n3", 1000)),
			}},
			want: []string{"gang-5"},
		},
		{
			name: "lowest priority before fewest pods",
			problem: Problem{Nodes: full("n0", "n1", "n2"), Demand: pods(1), Units: []Unit{
				unit("pod-50", 50, on("n2", 1000)),
				unit("gang-1", 1, on("n0", 1000), on("n1", 1000)),
			}},
			want: []string{"gang-1"},
		},
		{
			name: "at equal priority, one gang rather than two pods",
			problem: Problem{Nodes: full("n0", "n1", "n2", "n3"), Demand: pods(2), Units: []Unit{
				{Key: "pod-a", Priority: 5, Start: now, Pods: []VictimPod{on("n2", 1000)}},
				{Key: "pod-b", Priority: 5, Start: now, Pods: []VictimPod{on("n3", 1000)}},
				{Key: "gang", Priority: 5, Start: now.Add(-time.Hour), Pods: []VictimPod{on("n0", 1000), on("n1", 1000)}},
			}},
			want: []string{"gang"},
		},
		{
			name: "at equal priority, one pod rather than a gang when one pod is enough",
			problem: Problem{Nodes: full("n0", "n1", "n2"), Demand: pods(1), Units: []Unit{
				unit("gang", 5, on("n0", 1000), on("n1", 1000)),
				unit("pod", 5, on("n2", 1000)),
			}},
			want: []string{"pod"},
		},
		{
			name: "a victim the others make unnecessary is spared",
			problem: Problem{Nodes: []placement.Node{node("n0", "r1", 0), node("n1", "r1", 0)}, Demand: pods(1), Units: []Unit{
				unit("half-on-n0", 1, on("n0", 500)), // n0 keeps 500m of a pod that cannot go
				unit("whole-n1", 2, on("n1", 1000)),
			}},
			want: []string{"whole-n1"},
		},
		{
			name: "units that break a PodDisruptionBudget go last",
			problem: Problem{Nodes: full("n0", "n1"), Demand: pods(1), Units: []Unit{
				{Key: "protected", Priority: 1, ViolatesPDB: true, Pods: []VictimPod{on("n0", 1000)}},
				{Key: "free", Priority: 9, Pods: []VictimPod{on("n1", 1000)}},
			}},
			want: []string{"free"},
		},
		{
			name: "not enough even with every eligible unit gone",
			problem: Problem{Nodes: full("n0", "n1", "n2"), Demand: pods(3), Units: []Unit{
				unit("a", 1, on("n0", 1000)), unit("b", 1, on("n1", 1000)),
			}},
			outcome: NotEnough,
		},
		{
			name: "pods the preemptor may not use free nothing for it",
			problem: Problem{Nodes: []placement.Node{node("n0", "r1", 0), {Name: "gpu", Excluded: capacity.AnyClass}}, Demand: pods(1), Units: []Unit{
				unit("on-gpu", 1, on("gpu", 1000)),
			}},
			outcome: NotEnough,
		},
		{
			name: "required rack: evicts inside the rack where the least has to go",
			problem: Problem{
				Nodes:  []placement.Node{node("n0", "r1", 0), node("n1", "r1", 0), node("n2", "r2", 1000), node("n3", "r2", 0)},
				Demand: pods(2), Tree: rackGang(2), DomainKey: "rack",
				Units: []Unit{unit("a", 1, on("n0", 1000)), unit("b", 1, on("n1", 1000)), unit("c", 1, on("n3", 1000))},
			},
			want: []string{"c"}, domain: "r2",
		},
		{
			name: "required rack: a gang spanning racks frees room in neither alone",
			problem: Problem{
				Nodes:  full("n0", "n1", "n2", "n3"),
				Demand: pods(2), Tree: rackGang(2), DomainKey: "rack",
				Units: []Unit{unit("spread", 1, on("n1", 1000), on("n2", 1000)), unit("r2-pod", 3, on("n3", 1000))},
			},
			want: []string{"spread", "r2-pod"}, domain: "r2",
		},
		{
			name: "shared rack: evicts inside the rack the PodCliqueSet replica's other PodGangs pinned, though another is cheaper",
			problem: Problem{
				Nodes:  []placement.Node{node("base", "r1", 0), node("n0", "r1", 0), node("n1", "r1", 0), node("n2", "r2", 0), node("n3", "r2", 0)},
				Demand: pods(2), Tree: sharedRackGang(2), DomainKey: "rack", Shared: []string{"base"}, SharedBy: "replica-0",
				Units: []Unit{unit("r1-gang", 3, on("n0", 1000), on("n1", 1000)), unit("r2-gang", 1, on("n2", 1000), on("n3", 1000))},
			},
			want: []string{"r1-gang"}, domain: "r1",
		},
		{
			name: "required rack: devices already allocated to the gang's claims pin the rack",
			problem: Problem{
				Nodes:  full("n0", "n1", "n2", "n3"),
				Demand: pods(2), Tree: rackGang(2), DomainKey: "rack", Held: map[string][]string{"w": {"n0"}},
				Units: []Unit{unit("r1-gang", 3, on("n0", 1000), on("n1", 1000)), unit("r2-gang", 1, on("n2", 1000), on("n3", 1000))},
			},
			want: []string{"r1-gang"}, domain: "r1",
		},
		{
			name: "a replacement: its gang's survivors pin the rack, are never victims, and the cheaper gang elsewhere stays",
			problem: Problem{
				Nodes: []placement.Node{node("s0", "r1", 0), node("s1", "r1", 0), node("s2", "r1", 0), node("n0", "r1", 0),
					node("n2", "r2", 0), node("n3", "r2", 0)},
				Demand: pods(1), Tree: rackGang(4), DomainKey: "rack", Held: map[string][]string{"w": {"s0", "s1", "s2"}},
				Units: []Unit{unit("r1-gang", 3, on("n0", 1000)), unit("r2-gang", 1, on("n2", 1000), on("n3", 1000))},
			},
			want: []string{"r1-gang"}, domain: "r1",
		},
		{
			name: "one pod: the node whose victims are cheapest",
			problem: Problem{Nodes: full("n0", "n1"), Demand: pods(1), PerNode: true, Units: []Unit{
				unit("gang", 3, on("n0", 500), on("n1", 500)),
				unit("pod-n0", 2, on("n0", 500)),
				unit("pod-n1", 1, on("n1", 500)),
			}},
			want: []string{"pod-n1", "gang"}, domain: "n1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			choice, outcome := Select(tc.problem)
			assert.Equal(t, tc.outcome, outcome)
			var got []string
			for _, u := range choice.Victims {
				got = append(got, tc.problem.Units[u].Key)
			}
			assert.ElementsMatch(t, tc.want, got)
			assert.Equal(t, tc.domain, choice.Domain)
		})
	}
}
