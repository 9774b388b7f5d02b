package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// spreadTrees are the gang shapes the equivalence test plans: packed in a rack, unpacked, a
// block with a preferred rack, and a base PodGang whose scaling-group replicas d0 and d1 are
// kept apart, each in a rack (the shape scoped spreads come with).
var spreadTrees = []v1alpha1.PodGangSpec{
	{TopologyConstraint: required(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}},
	{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}},
	{TopologyConstraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{
		Required: required(blockKey).PackConstraint.Required, Preferred: preferred(rackKey).PackConstraint.Preferred}},
		PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}},
	{
		PodGroups: []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 2}, {Name: "d0", MinReplicas: 2}, {Name: "d1", MinReplicas: 2}},
		TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{
			{Name: "sg-0", PodGroupNames: []string{"d0"}, TopologyConstraint: required(rackKey)},
			{Name: "sg-1", PodGroupNames: []string{"d1"}, TopologyConstraint: required(rackKey)},
		},
		AntiAffinityGroups: []v1alpha1.RoleAffinityGroup{{Name: "sg", TopologyKey: rackKey, Required: true, Members: []v1alpha1.RoleAffinityMember{
			{Name: "sg-0", PodGroupNames: []string{"d0"}}, {Name: "sg-1", PodGroupNames: []string{"d1"}}}}},
	},
}

// randomSpreadInput is a random planning question under replica spreads: racks of random
// room (some nodes without a rack), other replicas on random nodes (some gone), required and
// preferred spreads over racks or blocks, scoped to PodGroups where the gang has them; now and
// then a PodGroup with nothing left to place, or in slices.
func randomSpreadInput(r *rand.Rand) Input {
	spec := spreadTrees[r.IntN(len(spreadTrees))]
	racks := map[string][]int64{}
	for k := range 2 + r.IntN(7) {
		rack := fmt.Sprintf("%c%d", "abc"[r.IntN(3)], k)
		for range 1 + r.IntN(6) {
			racks[rack] = append(racks[rack], int64(r.IntN(9)))
		}
	}
	nodes := cluster(racks)
	for i := range nodes {
		if r.IntN(10) == 0 {
			delete(nodes[i].Labels, rackKey)
		}
	}
	in := Input{Tree: NewTree(&spec), Nodes: nodes, Demand: map[string]capacity.Demand{}}
	var groups []string
	for _, g := range spec.PodGroups {
		groups = append(groups, g.Name)
		in.Demand[g.Name] = capacity.Demand{Group: g.Name, Shape: cores(1 + int64(r.IntN(3))), Count: int64(r.IntN(5))}
	}
	if d, ok := in.Demand["w"]; ok && d.Count > 1 && r.IntN(4) == 0 {
		// Slices of w, within a host or a rack, that may be required.
		sl := Slicing{Key: hostKey, Required: r.IntN(2) == 0, Sizes: []int64{d.Count / 2, d.Count - d.Count/2}}
		if r.IntN(2) == 0 {
			sl.Key = rackKey
		}
		in.Slices = map[string]Slicing{"w": sl}
	}
	for range 1 + r.IntN(3) {
		s := Spread{Key: rackKey, Required: r.IntN(3) == 0, MaxSkew: int32(r.IntN(4))}
		if r.IntN(4) == 0 {
			s.Key = blockKey
		}
		if len(groups) > 1 && r.IntN(2) == 0 {
			s.PodGroups = [][]string{{"d0"}, {"d1"}, {"d1", "d0"}}[r.IntN(3)]
		} else if r.IntN(8) == 0 {
			s.PodGroups = groups
		}
		for o := range r.IntN(9) {
			m := SpreadMember{Gang: fmt.Sprintf("g%d", r.IntN(5))}
			for range 1 + r.IntN(4) {
				if r.IntN(8) == 0 {
					m.Nodes = append(m.Nodes, fmt.Sprintf("gone-%d", o))
				} else {
					m.Nodes = append(m.Nodes, nodes[r.IntN(len(nodes))].Name)
				}
			}
			s.Others = append(s.Others, m)
		}
		in.Spread = append(in.Spread, s)
	}
	return in
}

// planView is a plan with the nodes its spreads allow named, to compare plans.
func planView(p *Plan) any {
	if p == nil {
		return nil
	}
	named := p.SpreadNodes()
	c := *p
	c.spreadNodes = nil
	return struct {
		Plan
		SpreadNodes sets.Set[string]
	}{c, named}
}

// The spread choice counts other replicas through the node index; its plans and unfit reasons
// are those it made when it looked every node's labels up, on thousands of random questions,
// with and without an index handed in.
func TestChooseSpreadAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 39))
	fits, unfits := 0, 0
	for c := range 3000 {
		in := randomSpreadInput(r)
		if c%2 == 0 {
			in.Index = NewIndex(in.Nodes)
		}
		nodes := slices.Clone(in.Nodes)
		want, wantUnfit := chooseSpreadBefore(in)
		require.Equal(t, nodes, in.Nodes, "case %d: the old choice changed the nodes", c)
		got, gotUnfit := Choose(in)
		require.Equal(t, nodes, in.Nodes, "case %d: the choice changed the nodes", c)
		require.Equal(t, planView(want), planView(got), "case %d: plan", c)
		if got != nil {
			// Asked about a few nodes, the spreads answer as the whole set does.
			for _, g := range []string{"w", "fe", "d0", "d1"} {
				for _, within := range []sets.Set[string]{nil, sets.New(in.Nodes[r.IntN(len(in.Nodes))].Name, in.Nodes[r.IntN(len(in.Nodes))].Name, "gone")} {
					whole := got.SpreadNodesFor(g)
					if whole != nil && within != nil {
						whole = whole.Intersection(within)
					}
					require.Equal(t, whole, got.SpreadNodesWithin(g, within), "case %d: PodGroup %s within %v", c, g, within)
				}
			}
		}
		require.Equal(t, wantUnfit, gotUnfit, "case %d: unfit", c)
		if wantUnfit == nil {
			fits++
		} else {
			unfits++
			require.Equal(t, wantUnfit.Error(), gotUnfit.Error(), "case %d", c)
		}

		before, after := slices.Clone(in.Nodes), slices.Clone(in.Nodes)
		wantScoped := blockRequiredSpreadBefore(before, in.Spread)
		gotScoped := BlockRequiredSpread(after, in.Spread)
		require.Equal(t, before, after, "case %d: blocked nodes", c)
		require.Equal(t, wantScoped, gotScoped, "case %d: scoped spreads", c)
	}
	// Both outcomes were compared, many times.
	require.Greater(t, fits, 500)
	require.Greater(t, unfits, 500)
}
