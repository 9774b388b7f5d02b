package preemption

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// A preemptor under a required replica spread frees room only where it may go: the cheapest
// victims sit in a rack another replica of its PodCliqueSet uses, so the dearer ones in a free
// rack go instead.
func TestSelectFreesRoomOnlyWhereARequiredSpreadAllows(t *testing.T) {
	problem := func(spreads []placement.Spread) Problem {
		p := Problem{
			Nodes:  []placement.Node{node("n0", "r1", 0), node("n1", "r1", 0), node("n4", "r1", 0), node("n2", "r2", 0), node("n3", "r2", 0)},
			Demand: pods(2), Tree: rackGang(2), DomainKey: "rack",
			Units: []Unit{
				unit("gang-1", 1, on("n0", 1000), on("n1", 1000)),
				unit("gang-5", 5, on("n2", 1000), on("n3", 1000)),
			},
		}
		placement.BlockRequiredSpread(p.Nodes, spreads)
		return p
	}
	victims := func(p Problem) ([]string, string) {
		choice, _ := Select(p)
		var got []string
		for _, u := range choice.Victims {
			got = append(got, p.Units[u].Key)
		}
		return got, choice.Domain
	}

	got, domain := victims(problem(nil))
	assert.Equal(t, []string{"gang-1"}, got, "without a spread the lowest priority goes")
	assert.Equal(t, "r1", domain)

	spread := []placement.Spread{{Key: "rack", Required: true, Others: []placement.SpreadMember{{Gang: "pcs-0", Nodes: []string{"n4"}}}}}
	got, domain = victims(problem(spread))
	assert.Equal(t, []string{"gang-5"}, got, "r1 runs another replica: room there is no room for the preemptor")
	assert.Equal(t, "r2", domain)
}

// The same for a scaling-group replica in a base PodGang: its required spread is scoped to its
// PodGroup d0 (packed into a rack), so blocking nodes for the whole gang cannot express it; room
// for d0 counts only outside the rack the scaling group's other replica uses, while the
// gang's unpacked clique fe could still use that rack.
func TestSelectFreesRoomOnlyWhereAScopedRequiredSpreadAllows(t *testing.T) {
	tree := placement.NewTree(&v1alpha1.PodGangSpec{
		PodGroups: []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 1}, {Name: "d0", MinReplicas: 2}},
		TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{{Name: "sg-0", PodGroupNames: []string{"d0"},
			TopologyConstraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To("rack")}}}},
	})
	problem := func(spreads []placement.Spread) Problem {
		p := Problem{
			Nodes:  []placement.Node{node("n0", "r1", 0), node("n1", "r1", 0), node("n4", "r1", 0), node("n2", "r2", 0), node("n3", "r2", 0)},
			Demand: capacity.Demands{{Group: "d0", Shape: cpu(1000), Count: 2}}, Tree: tree,
			Units: []Unit{
				unit("gang-1", 1, on("n0", 1000), on("n1", 1000)),
				unit("gang-5", 5, on("n2", 1000), on("n3", 1000)),
			},
		}
		p.Spread = placement.BlockRequiredSpread(p.Nodes, spreads)
		return p
	}
	victims := func(p Problem) []string {
		choice, outcome := Select(p)
		require.Equal(t, Found, outcome)
		var got []string
		for _, u := range choice.Victims {
			got = append(got, p.Units[u].Key)
		}
		return got
	}

	assert.Equal(t, []string{"gang-1"}, victims(problem(nil)), "without a spread the lowest priority goes")
	scoped := []placement.Spread{{Key: "rack", Required: true, PodGroups: []string{"d0"},
		Others: []placement.SpreadMember{{Gang: "pcs-0-sg-1", Nodes: []string{"n4"}}}}}
	p := problem(scoped)
	for _, n := range p.Nodes {
		assert.Zero(t, n.Excluded, "%s: a scoped spread blocks no node for the whole gang", n.Name)
	}
	assert.Equal(t, []string{"gang-5"}, victims(p), "r1 runs another replica of d0's scaling group: room there is no room for d0")
}
