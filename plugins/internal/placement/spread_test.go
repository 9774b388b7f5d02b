package placement

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// TestChooseUnderReplicaSpread: the rack (and nodes) a replica's gang gets when other replicas
// of its spread group already hold nodes. Racks a1..a4 of four 4-core nodes; the gang asks
// for 4 pods of 4 cores.
func TestChooseUnderReplicaSpread(t *testing.T) {
	four := map[string][]int64{"a1": {4, 4, 4, 4}, "a2": {4, 4, 4, 4}, "a3": {4, 4, 4, 4}, "b4": {4, 4, 4, 4}}
	packed := v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}}
	loose := v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}}
	member := func(gang string, nodes ...string) SpreadMember { return SpreadMember{Gang: gang, Nodes: nodes} }
	cases := []struct {
		name  string
		spec  v1alpha1.PodGangSpec
		nodes []Node
		// free overrides the free cores of nodes (the others' pods use them).
		free   map[string]int64
		spread []Spread
		// wantRack is the required rack chosen; wantSpread the racks SpreadNodes covers ("" =
		// nil); wantRequired the racks SpreadRequiredNodes covers.
		wantRack, wantSpread, wantRequired string
		wantUnfit, wantCause               string
	}{
		{
			name:  "required: racks of other replicas are not candidates, the tightest free one is",
			spec:  packed,
			nodes: cluster(four),
			spread: []Spread{{Key: rackKey, Required: true, Others: []SpreadMember{
				member("pcs-0", "a1-0", "a1-1"), member("pcs-1", "a2-0")}}},
			wantRack: "a3", wantRequired: "a3,b4",
		},
		{
			name:  "required: a replica's gang spanning two racks takes both",
			spec:  loose,
			nodes: cluster(four),
			spread: []Spread{{Key: rackKey, Required: true, Others: []SpreadMember{
				member("pcs-0", "a1-0", "a2-3"), member("pcs-1", "a3-0")}}},
			wantRequired: "b4",
		},
		{
			name:  "required: every rack used: waits, saying the spread is why",
			spec:  packed,
			nodes: cluster(four),
			spread: []Spread{{Key: rackKey, Required: true, Others: []SpreadMember{
				member("pcs-0", "a1-0"), member("pcs-1", "a2-0"), member("pcs-2", "a3-0"), member("pcs-3", "b4-0")}}},
			wantUnfit: `the PodGang needs 4 pods of 4 CPU within a domain of its own: no rack (topology.kubernetes.io/rack) that holds it ` +
				`is free of the other replicas of its PodCliqueSet; in use: "a1" (PodGang pcs-0), "a2" (PodGang pcs-1), "a3" (PodGang pcs-2), "b4" (PodGang pcs-3)`,
			wantCause: "spread",
		},
		{
			name:  "required: the free rack is too small: a plain shortage is not blamed on the spread",
			spec:  packed,
			nodes: cluster(map[string][]int64{"a1": {4, 4, 4, 4}, "a2": {4, 4}}),
			free:  map[string]int64{"a1-1": 0},
			spread: []Spread{{Key: rackKey, Required: true, Others: []SpreadMember{
				member("pcs-0", "a1-0")}}},
			wantCause: "no_domain",
		},
		{
			name:     "required: no other replica holds a node: every rack is a candidate",
			spec:     packed,
			nodes:    cluster(four),
			spread:   []Spread{{Key: rackKey, Required: true}},
			wantRack: "a1", wantRequired: "a1,a2,a3,b4",
		},
		{
			name:  "preferred: the least used rack wins over the tighter used one",
			spec:  packed,
			nodes: cluster(map[string][]int64{"a1": {4, 4, 4, 4, 4}, "a2": {4, 4, 4, 4, 4, 4}}),
			free:  map[string]int64{"a1-4": 0},
			spread: []Spread{{Key: rackKey, MaxSkew: 1, Others: []SpreadMember{
				member("pcs-0", "a1-4")}}},
			wantRack: "a2", wantSpread: "a2",
		},
		{
			name:  "preferred: racks are short: it shares the least used rack that holds it",
			spec:  packed,
			nodes: cluster(map[string][]int64{"a1": {4, 4, 4, 4, 4, 4, 4, 4}, "a2": {4, 4, 4, 4, 4, 4, 4, 4}, "a3": {4, 4}}),
			spread: []Spread{{Key: rackKey, MaxSkew: 1, Others: []SpreadMember{
				member("pcs-0", "a1-0"), member("pcs-1", "a1-1"), member("pcs-2", "a2-0")}}},
			wantRack: "a2", wantSpread: "a2,a3",
		},
		{
			name:  "preferred: maxSkew 2 lets packing win while the skew stays within it",
			spec:  packed,
			nodes: cluster(map[string][]int64{"a1": {4, 4, 4, 4, 4}, "a2": {4, 4, 4, 4, 4, 4, 4, 4}}),
			spread: []Spread{{Key: rackKey, MaxSkew: 2, Others: []SpreadMember{
				member("pcs-0", "a1-4")}}},
			wantRack: "a1",
		},
		{
			name:  "preferred: every rack is used as much: nothing is restricted",
			spec:  packed,
			nodes: cluster(map[string][]int64{"a1": {4, 4, 4, 4, 4}, "a2": {4, 4, 4, 4, 4, 4}}),
			spread: []Spread{{Key: rackKey, MaxSkew: 1, Others: []SpreadMember{
				member("pcs-0", "a1-4"), member("pcs-1", "a2-5")}}},
			wantRack: "a1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.nodes {
				if c, ok := tc.free[tc.nodes[i].Name]; ok {
					tc.nodes[i].Free.MilliCPU = c * 1000
				}
			}
			plan, unfit := Choose(Input{Tree: NewTree(&tc.spec), Nodes: tc.nodes, Spread: tc.spread,
				Demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 4}}})
			if tc.wantCause != "" {
				require.NotNil(t, unfit)
				assert.Equal(t, tc.wantCause, unfit.Cause())
				if tc.wantUnfit != "" {
					assert.Equal(t, tc.wantUnfit, unfit.Error())
				}
				return
			}
			require.Nil(t, unfit, "unfit: %v", unfit)
			var rack string
			if r := plan.Required("w"); len(r) > 0 {
				rack = r[len(r)-1].Value
			}
			assert.Equal(t, tc.wantRack, rack)
			assert.Equal(t, tc.wantSpread, racksOf(plan.SpreadNodes()), "spread nodes")
			assert.Equal(t, tc.wantRequired, racksOf(plan.SpreadRequiredNodes()), "required spread nodes")
		})
	}
}

// racksOf names the racks of nodes named <rack>-<n>, comma-separated; "" for nil.
func racksOf(nodes interface{ UnsortedList() []string }) string {
	if nodes == nil {
		return ""
	}
	racks := map[string]bool{}
	for _, n := range nodes.UnsortedList() {
		racks[n[:2]] = true
	}
	out := ""
	for _, r := range sortedKeys(racks) {
		if out != "" {
			out += ","
		}
		out += r
	}
	return out
}

// TestChooseUnderScopedSpread: a base PodGang holding a standalone clique "fe" and two
// scaling-group replicas (d0, d1; each a PodGroup packed into a rack, kept apart by an
// anti-affinity group) whose scoped spread entries see a scaled gang of the scaling group in
// rack a1. A scoped entry takes a1 away from its replica's PodGroup only: "fe" may still use
// it. Racks a1..a3 of two 4-core nodes; each PodGroup asks for 2 pods of 4 cores.
func TestChooseUnderScopedSpread(t *testing.T) {
	spec := v1alpha1.PodGangSpec{
		PodGroups: []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 2}, {Name: "d0", MinReplicas: 2}, {Name: "d1", MinReplicas: 2}},
		TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{
			{Name: "sg-0", PodGroupNames: []string{"d0"}, TopologyConstraint: required(rackKey)},
			{Name: "sg-1", PodGroupNames: []string{"d1"}, TopologyConstraint: required(rackKey)},
		},
		AntiAffinityGroups: []v1alpha1.RoleAffinityGroup{{Name: "sg", TopologyKey: rackKey, Required: true, Members: []v1alpha1.RoleAffinityMember{
			{Name: "sg-0", PodGroupNames: []string{"d0"}}, {Name: "sg-1", PodGroupNames: []string{"d1"}}}}},
	}
	scaled := []SpreadMember{{Gang: "sg-2", Nodes: []string{"a1-0"}}}
	demand := map[string]capacity.Demand{
		"fe": {Group: "fe", Shape: cores(4), Count: 2}, "d0": {Group: "d0", Shape: cores(4), Count: 2}, "d1": {Group: "d1", Shape: cores(4), Count: 2}}
	rackOf := func(p *Plan, g string) string {
		c := p.Required(g)
		if len(c) == 0 {
			return ""
		}
		return c[len(c)-1].Value
	}
	cases := []struct {
		name   string
		racks  map[string][]int64
		spread []Spread
		// wantD: the racks of d0 and d1, sorted; wantUnfit: part of the message.
		wantD, wantUnfit string
	}{
		{
			name:  "required: the replicas take the racks the scaled gang leaves; fe is not bound by them",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4}, "a3": {4, 4}, "a4": {4, 4}},
			spread: []Spread{
				{Key: rackKey, Required: true, PodGroups: []string{"d0"}, Others: scaled},
				{Key: rackKey, Required: true, PodGroups: []string{"d1"}, Others: scaled},
			},
			wantD: "a2,a3",
		},
		{
			name:  "required: one free rack for two replicas: the gang waits, the scaling group's spread is why",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4, 4}},
			spread: []Spread{
				{Key: rackKey, Required: true, PodGroups: []string{"d0"}, Others: scaled},
				{Key: rackKey, Required: true, PodGroups: []string{"d1"}, Others: scaled},
			},
			wantUnfit: "its scaling group (PodGroups d0)",
		},
		{
			name:  "preferred: the replicas leave the scaled gang's rack while others are free",
			racks: map[string][]int64{"a1": {4, 4, 4, 4}, "a2": {4, 4}, "a3": {4, 4}},
			spread: []Spread{
				{Key: rackKey, MaxSkew: 1, PodGroups: []string{"d0"}, Others: scaled},
				{Key: rackKey, MaxSkew: 1, PodGroups: []string{"d1"}, Others: scaled},
			},
			wantD: "a2,a3",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, unfit := Choose(Input{Tree: NewTree(&spec), Nodes: cluster(tc.racks), Spread: tc.spread, Demand: demand})
			if tc.wantUnfit != "" {
				require.NotNil(t, unfit)
				assert.Contains(t, unfit.Error(), tc.wantUnfit)
				assert.Equal(t, "spread", unfit.Cause())
				return
			}
			require.Nil(t, unfit, "%v", unfit)
			got := []string{rackOf(plan, "d0"), rackOf(plan, "d1")}
			sort.Strings(got)
			assert.Equal(t, tc.wantD, strings.Join(got, ","))
			assert.Empty(t, rackOf(plan, "fe"))
			// fe's members are not narrowed by the scoped spreads; d0's are.
			assert.Nil(t, plan.SpreadRequiredNodesFor("fe"))
			assert.Nil(t, plan.SpreadNodesFor("fe"))
			if tc.spread[0].Required {
				assert.False(t, plan.SpreadRequiredNodesFor("d0").Has("a1-0"))
			}
		})
	}
}
