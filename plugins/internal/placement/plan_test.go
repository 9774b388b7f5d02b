package placement

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

const (
	blockKey = "example.com/block"
	rackKey  = "topology.kubernetes.io/rack"
	hostKey  = "kubernetes.io/hostname"
)

func required(key string) *v1alpha1.TopologyConstraint {
	return &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(key)}}
}

func preferred(key string) *v1alpha1.TopologyConstraint {
	return &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Preferred: ptr.To(key)}}
}

// cluster builds nodes named <block>-<rack>-<n> with the given free CPUs (cores) per node, listed
// per rack; every rack sits in the block named by its first letter.
func cluster(racks map[string][]int64) []Node {
	var nodes []Node
	for _, rack := range sortedKeys(racks) {
		for i, cores := range racks[rack] {
			name := fmt.Sprintf("%s-%d", rack, i)
			nodes = append(nodes, Node{
				Name:   name,
				Labels: map[string]string{blockKey: rack[:1], rackKey: rack, hostKey: name},
				Free:   capacity.Resources{MilliCPU: cores * 1000, Memory: 1 << 40, Pods: 110},
			})
		}
	}
	return nodes
}

// withExcluded sets the excluded classes of the named nodes.
func withExcluded(nodes []Node, excluded map[string]capacity.Mask) []Node {
	for i := range nodes {
		nodes[i].Excluded = excluded[nodes[i].Name]
	}
	return nodes
}

func cores(n int64) capacity.Resources { return capacity.Resources{MilliCPU: n * 1000, Pods: 1} }

func names(s sets.Set[string]) []string { return sets.List(s) }

func TestChooseRequiredDomain(t *testing.T) {
	type want struct {
		rack    string   // chosen required rack of group "w" ("" = no required choice)
		allowed []string // allowed nodes of group "w"
		unfit   string
	}
	gangRack := v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 8}}}
	cases := []struct {
		name   string
		spec   v1alpha1.PodGangSpec
		nodes  []Node
		demand map[string]capacity.Demand
		held   map[string][]string
		want   want
	}{
		{
			name:   "tightest rack that holds the gang wins, leaving the big rack free",
			spec:   gangRack,
			nodes:  cluster(map[string][]int64{"a1": {16, 16, 16, 16}, "a2": {8, 8, 8, 8}, "a3": {4, 4}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 8}},
			want:   want{rack: "a2", allowed: []string{"a2-0", "a2-1", "a2-2", "a2-3"}},
		},
		{
			name:   "no rack holds the gang although the cluster does",
			spec:   gangRack,
			nodes:  cluster(map[string][]int64{"a1": {8, 8, 8}, "a2": {8, 4}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 8}},
			want:   want{unfit: `the PodGang needs 8 pods of 4 CPU within one rack (topology.kubernetes.io/rack); the best rack, "a1", fits 6`},
		},
		{
			name:   "members already bound pin the rack even when another is tighter",
			spec:   gangRack,
			nodes:  cluster(map[string][]int64{"a1": {16, 16}, "a2": {4, 4}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 2}},
			held:   map[string][]string{"w": {"a1-0", "a1-0", "a1-1"}},
			want:   want{rack: "a1", allowed: []string{"a1-0", "a1-1"}},
		},
		{
			name:   "pinned rack without room leaves the gang pending",
			spec:   gangRack,
			nodes:  cluster(map[string][]int64{"a1": {4}, "a2": {16, 16}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 3}},
			held:   map[string][]string{"w": {"a1-0"}},
			want:   want{unfit: `the PodGang needs 3 pods of 4 CPU more within rack "a1" (topology.kubernetes.io/rack), where its members already run; it fits 1`},
		},
		{
			name:   "nodes without the label are never used",
			spec:   gangRack,
			nodes:  append(cluster(map[string][]int64{"a1": {4}}), Node{Name: "unlabelled", Labels: map[string]string{}, Free: cores(64)}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 2}},
			want:   want{unfit: `the PodGang needs 2 pods of 4 CPU within one rack (topology.kubernetes.io/rack); the best rack, "a1", fits 1`},
		},
		{
			name:   "no node carries the key",
			spec:   v1alpha1.PodGangSpec{TopologyConstraint: required("example.com/missing"), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 1}}},
			nodes:  cluster(map[string][]int64{"a1": {4}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(1), Count: 1}},
			want:   want{unfit: `the PodGang needs 1 pod of 1 CPU within one missing, but no node it may use has the label example.com/missing`},
		},
		{
			name: "a group config packs a subset; the other group may go anywhere",
			spec: v1alpha1.PodGangSpec{
				PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 2}, {Name: "router", MinReplicas: 1}},
				TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{
					{Name: "workers", PodGroupNames: []string{"w"}, TopologyConstraint: required(rackKey)},
				},
			},
			nodes:  cluster(map[string][]int64{"a1": {2, 2}, "a2": {8}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(2), Count: 2}, "router": {Group: "router", Shape: cores(1), Count: 1}},
			want:   want{rack: "a1", allowed: []string{"a1-0", "a1-1"}},
		},
		{
			// Rack a1 is the tightest fit by room, but only on GPU nodes the router may not use; a2 holds
			// the router on its CPU node and the workers on its GPU nodes.
			name: "each PodGroup counts only the nodes its pods may use",
			spec: v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey),
				PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}, {Name: "router", MinReplicas: 1}}},
			nodes: withExcluded(cluster(map[string][]int64{"a1": {16, 16, 16}, "a2": {2, 32, 32}}), map[string]capacity.Mask{
				"a1-0": capacity.ClassMask(0), "a1-1": capacity.ClassMask(0), "a1-2": capacity.ClassMask(0),
				"a2-0": capacity.ClassMask(1), "a2-1": capacity.ClassMask(0), "a2-2": capacity.ClassMask(0),
			}),
			demand: map[string]capacity.Demand{
				"w":      {Group: "w", Shape: cores(4), Count: 4, Class: 1},
				"router": {Group: "router", Shape: cores(1), Count: 1, Class: 0},
			},
			want: want{rack: "a2", allowed: []string{"a2-0", "a2-1", "a2-2"}},
		},
		{
			name: "a PodGroup no node of any rack admits leaves the gang pending",
			spec: v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey),
				PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 2}, {Name: "router", MinReplicas: 1}}},
			nodes: withExcluded(cluster(map[string][]int64{"a1": {16, 16}}), map[string]capacity.Mask{
				"a1-0": capacity.ClassMask(0), "a1-1": capacity.ClassMask(0),
			}),
			demand: map[string]capacity.Demand{
				"w":      {Group: "w", Shape: cores(4), Count: 2, Class: 1},
				"router": {Group: "router", Shape: cores(1), Count: 1, Class: 0},
			},
			want: want{unfit: `the PodGang needs 3 pods (2 of 4 CPU; 1 of 1 CPU) within one rack (topology.kubernetes.io/rack); the best rack, "a1", fits 2`},
		},
		{
			name:   "plain shortage without keys",
			spec:   v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 3}}},
			nodes:  cluster(map[string][]int64{"a1": {4, 4}}),
			demand: map[string]capacity.Demand{"w": {Group: "w", Shape: cores(3), Count: 3}},
			want:   want{unfit: "the PodGang needs 3 pods of 3 CPU; the nodes it may use fit 2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, unfit := Choose(Input{Tree: NewTree(&tc.spec), Nodes: tc.nodes, Demand: tc.demand, Held: tc.held})
			if tc.want.unfit != "" {
				require.NotNil(t, unfit, "want unfit")
				assert.Equal(t, tc.want.unfit, unfit.Error())
				return
			}
			require.Nil(t, unfit)
			if tc.want.rack == "" {
				assert.Empty(t, plan.Required("w"))
				assert.Nil(t, plan.AllowedNodes("w"))
				return
			}
			assert.Equal(t, []Choice{{Key: rackKey, Value: tc.want.rack}}, plan.Required("w"))
			assert.Equal(t, tc.want.allowed, names(plan.AllowedNodes("w")))
		})
	}
}

func TestChooseNestedDomains(t *testing.T) {
	// The gang must share a block; each PodGroup must share a host inside it.
	spec := v1alpha1.PodGangSpec{
		TopologyConstraint: required(blockKey),
		PodGroups: []v1alpha1.PodGroup{
			{Name: "prefill", MinReplicas: 2, TopologyConstraint: required(hostKey)},
			{Name: "decode", MinReplicas: 3, TopologyConstraint: required(hostKey)},
		},
	}
	demand := map[string]capacity.Demand{
		"prefill": {Group: "prefill", Shape: cores(2), Count: 2},
		"decode":  {Group: "decode", Shape: cores(2), Count: 3},
	}
	cases := []struct {
		name        string
		nodes       []Node
		held        map[string][]string
		wantBlock   string
		wantHosts   map[string]string
		wantUnfit   string
		wantAllowed map[string][]string
	}{
		{
			name: "block a has one host for both groups only if they do not share it; block b fits tighter",
			// Block a: hosts of 6 and 4 cores. Block b: hosts of 4 and 6 cores and one of 2.
			nodes:     cluster(map[string][]int64{"a1": {6, 4}, "b1": {4, 6, 2}}),
			wantBlock: "a",
			wantHosts: map[string]string{"decode": "a1-0", "prefill": "a1-1"},
		},
		{
			name:      "the group with more members picks its host first, siblings do not share capacity",
			nodes:     cluster(map[string][]int64{"a1": {10}}),
			wantBlock: "a",
			wantHosts: map[string]string{"decode": "a1-0", "prefill": "a1-0"},
		},
		{
			name:      "no host in any block holds decode",
			nodes:     cluster(map[string][]int64{"a1": {4, 4, 4}, "b1": {4, 4}}),
			wantUnfit: `in the best block, "a": PodGroup "decode" needs 3 pods of 2 CPU within one hostname (kubernetes.io/hostname); the best hostname, "a1-0", fits 2`,
		},
		{
			name:      "a bound decode member pins both its host and its block",
			nodes:     cluster(map[string][]int64{"a1": {6, 4}, "b1": {8, 8}}),
			held:      map[string][]string{"decode": {"b1-1"}},
			wantBlock: "b",
			wantHosts: map[string]string{"decode": "b1-1", "prefill": "b1-0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, unfit := Choose(Input{Tree: NewTree(&spec), Nodes: tc.nodes, Demand: demand, Held: tc.held})
			if tc.wantUnfit != "" {
				require.NotNil(t, unfit)
				assert.Equal(t, tc.wantUnfit, unfit.Error())
				return
			}
			require.Nil(t, unfit, "unexpected: %v", unfit)
			for group, host := range tc.wantHosts {
				assert.Equal(t, []Choice{{Key: blockKey, Value: tc.wantBlock}, {Key: hostKey, Value: host}}, plan.Required(group), group)
				assert.Equal(t, []string{host}, names(plan.AllowedNodes(group)), group)
			}
		})
	}
}

func TestChoosePreferredNeverFails(t *testing.T) {
	spec := v1alpha1.PodGangSpec{TopologyConstraint: preferred(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}}
	cases := []struct {
		name  string
		nodes []Node
		held  map[string][]string
		want  string
		// wantNodes: the preferred rack's nodes when it holds the gang, else none.
		wantNodes []string
	}{
		{"tightest rack that holds the gang", cluster(map[string][]int64{"a1": {16, 16}, "a2": {8, 8}, "a3": {4}}), nil, "a2", []string{"a2-0", "a2-1"}},
		{"none holds it: the rack that holds most", cluster(map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4}}), nil, "a2", nil},
		{"the rack members already run in", cluster(map[string][]int64{"a1": {16, 16}, "a2": {8, 8}}), map[string][]string{"w": {"a1-1"}}, "a1", []string{"a1-0", "a1-1"}},
		{"the rack members already run in, though it is too small now", cluster(map[string][]int64{"a1": {4}, "a2": {8, 8}}), map[string][]string{"w": {"a1-0"}}, "a1", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			demand := map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 4}}
			if tc.name == "none holds it: the rack that holds most" {
				demand["w"] = capacity.Demand{Group: "w", Shape: cores(4), Count: 5}
			}
			plan, unfit := Choose(Input{Tree: NewTree(&spec), Nodes: tc.nodes, Demand: demand, Held: tc.held})
			require.Nil(t, unfit)
			c, ok := plan.Preferred("w")
			require.True(t, ok)
			assert.Equal(t, Choice{Key: rackKey, Value: tc.want}, c)
			assert.Nil(t, plan.AllowedNodes("w"), "preferred keys never require nodes")
			if tc.wantNodes == nil {
				assert.Nil(t, plan.PreferredNodes("w"))
			} else {
				assert.Equal(t, tc.wantNodes, names(plan.PreferredNodes("w")))
			}
		})
	}
}

func TestTreeNesting(t *testing.T) {
	spec := v1alpha1.PodGangSpec{
		TopologyConstraint: required(blockKey),
		PodGroups: []v1alpha1.PodGroup{
			{Name: "a", MinReplicas: 1, TopologyConstraint: required(hostKey)},
			{Name: "b", MinReplicas: 1},
			{Name: "c", MinReplicas: 1, TopologyConstraint: preferred(hostKey)},
			{Name: "free", MinReplicas: 1},
		},
		TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{
			{Name: "ab", PodGroupNames: []string{"a", "b"}, TopologyConstraint: required(rackKey)},
			{Name: "unconstrained", PodGroupNames: []string{"c"}},
		},
	}
	tree := NewTree(&spec)
	ids := func(group string) []string {
		var out []string
		for _, s := range tree.Chain(group) {
			out = append(out, s.ID)
		}
		return out
	}
	assert.Equal(t, []string{"podgang", "config/ab", "group/a"}, ids("a"))
	assert.Equal(t, []string{"podgang", "config/ab"}, ids("b"))
	assert.Equal(t, []string{"podgang", "group/c"}, ids("c"))
	assert.Equal(t, []string{"podgang"}, ids("free"))
	req, pref := tree.Constrains("c")
	assert.True(t, req, "inherits the block")
	assert.True(t, pref)
	assert.True(t, tree.Constrained())
	assert.False(t, NewTree(&v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "x"}}}).Constrained())
}

// A scaled PodGang of a PodCliqueSet replica: its own rack inside the block the replica's
// other PodGangs were placed in, even when another block has a tighter rack; with no room in
// that block it does not spill over but says which gang pinned the block.
func TestSharedConstraintFollowsTheGroup(t *testing.T) {
	shared := &v1alpha1.SharedTopologyConstraint{Group: "pcs-0", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(blockKey)}}
	spec := v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey), SharedTopologyConstraint: shared,
		PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 2}}}
	demand := map[string]capacity.Demand{"w": {Group: "w", Shape: cores(1), Count: 2}}
	tree := NewTree(&spec)
	require.Equal(t, SharedSetID, tree.Root.ID)
	assert.Equal(t, []string{SharedSetID, "podgang"}, []string{tree.Chain("w")[0].ID, tree.Chain("w")[1].ID})

	// b1 is the tightest rack that holds the gang; the group sits in block a.
	nodes := cluster(map[string][]int64{"a1": {1, 1, 1}, "a2": {0, 1, 1, 1}, "b1": {1, 1}})
	plan, unfit := Choose(Input{Tree: tree, Nodes: nodes, Demand: demand})
	require.Nil(t, unfit)
	assert.Equal(t, []Choice{{Key: blockKey, Value: "b"}, {Key: rackKey, Value: "b1"}}, plan.Required("w"), "alone, the tightest rack wins")

	plan, unfit = Choose(Input{Tree: tree, Nodes: nodes, Demand: demand, Shared: []string{"a2-0"}, SharedBy: "pcs-0"})
	require.Nil(t, unfit)
	assert.Equal(t, []Choice{{Key: blockKey, Value: "a"}, {Key: rackKey, Value: "a1"}}, plan.Required("w"), "the group's block pins the gang")
	assert.Equal(t, []string{"a1-0", "a1-1", "a1-2"}, names(plan.AllowedNodes("w")))

	// Block a has no rack with room: the gang waits, naming the block and the gang that
	// pinned it.
	full := cluster(map[string][]int64{"a1": {1, 0, 0}, "a2": {0, 0, 0, 1}, "b1": {1, 1}})
	_, unfit = Choose(Input{Tree: tree, Nodes: full, Demand: demand, Shared: []string{"a2-0"}, SharedBy: "pcs-0"})
	require.NotNil(t, unfit)
	assert.Equal(t, `in block "a", where PodGang pcs-0 of its group was placed: the PodGang needs 2 pods of 1 CPU within one rack (topology.kubernetes.io/rack); the best rack, "a1", fits 1`, unfit.Error())
	// A gang with no rack of its own: block a is too full.
	plain := v1alpha1.PodGangSpec{SharedTopologyConstraint: shared, PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 2}}}
	fuller := cluster(map[string][]int64{"a1": {0, 0, 0}, "a2": {0, 0, 0, 1}, "b1": {1, 1}})
	_, unfit = Choose(Input{Tree: NewTree(&plain), Nodes: fuller, Demand: demand, Shared: []string{"a2-0"}, SharedBy: "pcs-0"})
	require.NotNil(t, unfit)
	assert.Equal(t, `the PodGang needs 2 pods of 1 CPU within block "a" (example.com/block), where PodGang pcs-0 of its group was placed; it fits 1`, unfit.Error())

	// The gang's own members outvote nothing: they are in the group's block already.
	_, unfit = Choose(Input{Tree: tree, Nodes: full, Demand: demand, Held: map[string][]string{"w": {"b1-0"}}, Shared: []string{"a2-0"}, SharedBy: "pcs-0"})
	require.Nil(t, unfit, "a gang whose own members run in block b stays there")

	// A shared preference steers the gang to the group's block without binding it.
	prefShared := &v1alpha1.SharedTopologyConstraint{Group: "pcs-0", PackConstraint: &v1alpha1.TopologyPackConstraint{Preferred: ptr.To(blockKey)}}
	prefSpec := v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey), SharedTopologyConstraint: prefShared,
		PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 2}}}
	plan, unfit = Choose(Input{Tree: NewTree(&prefSpec), Nodes: nodes, Demand: demand, Shared: []string{"a2-0"}, SharedBy: "pcs-0"})
	require.Nil(t, unfit)
	c, ok := plan.Preferred("w")
	require.True(t, ok)
	assert.Equal(t, Choice{Key: blockKey, Value: "a"}, c)
	plan, unfit = Choose(Input{Tree: NewTree(&prefSpec), Nodes: full, Demand: demand, Shared: []string{"a2-0"}, SharedBy: "pcs-0"})
	require.Nil(t, unfit, "a preference never keeps the gang out")
	assert.Equal(t, []Choice{{Key: rackKey, Value: "b1"}}, plan.Required("w"))
}

// The first gang of a group to be placed chooses the shared domain for the whole group: the
// tightest block that also holds every other PodGang of the group, at full size, else at
// quorum, else the one holding most of them.
func TestSharedDomainIsChosenForTheWholeGroup(t *testing.T) {
	shared := &v1alpha1.SharedTopologyConstraint{Group: "pcs-0", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(blockKey)}}
	// A gang of pairs, each pair on one host (2 CPU nodes of 1-CPU pods: one pair per node).
	pairs := func(groups ...string) (*Tree, map[string]capacity.Demand) {
		spec := v1alpha1.PodGangSpec{SharedTopologyConstraint: shared}
		demand := map[string]capacity.Demand{}
		for _, g := range groups {
			spec.PodGroups = append(spec.PodGroups, v1alpha1.PodGroup{Name: g, MinReplicas: 2, TopologyConstraint: required(hostKey)})
			demand[g] = capacity.Demand{Group: g, Shape: cores(1), Count: 2}
		}
		return NewTree(&spec), demand
	}
	racks := func(block string, nodes int) map[string][]int64 {
		out := map[string][]int64{}
		for i := 0; i < nodes; i++ {
			rack := fmt.Sprintf("%s%d", block, i/4)
			out[rack] = append(out[rack], 2)
		}
		return out
	}
	all := racks("a", 8)
	for k, v := range racks("b", 20) {
		all[k] = v
	}
	nodes := cluster(all)
	tree, demand := pairs("w0", "w1", "w2")
	var group []Companion
	for i := 3; i < 10; i++ {
		ct, cd := pairs(fmt.Sprintf("w%d", i))
		group = append(group, Companion{Tree: ct, Quorum: cd, Full: cd})
	}

	plan, unfit := Choose(Input{Tree: tree, Nodes: nodes, Demand: demand})
	require.Nil(t, unfit)
	assert.Equal(t, Choice{Key: blockKey, Value: "a"}, plan.Required("w0")[0], "alone, the base gang takes the tightest block")

	plan, unfit = Choose(Input{Tree: tree, Nodes: nodes, Demand: demand, Group: group})
	require.Nil(t, unfit)
	assert.Equal(t, Choice{Key: blockKey, Value: "b"}, plan.Required("w0")[0], "only block b holds the whole group")

	// Quorum before full size: with full-size companions of 2 pairs, no block holds them all
	// (block b holds 3 + 14 pairs); at quorum (1 pair each) block a does not, block b does.
	var bigger []Companion
	for i := 3; i < 10; i++ {
		ct, cd := pairs(fmt.Sprintf("w%d", i))
		full := map[string]capacity.Demand{}
		for g, d := range cd {
			d.Count = 4
			full[g] = d
		}
		bigger = append(bigger, Companion{Tree: ct, Quorum: cd, Full: full})
	}
	plan, unfit = Choose(Input{Tree: tree, Nodes: nodes, Demand: demand, Group: bigger})
	require.Nil(t, unfit)
	assert.Equal(t, Choice{Key: blockKey, Value: "b"}, plan.Required("w0")[0])

	// No block holds the whole group: the one holding the quorums of most of it.
	small := cluster(map[string][]int64{"a0": {2, 2, 2, 2}, "a1": {2, 2}, "b0": {2, 2, 2, 2}, "b1": {2, 2, 2}})
	plan, unfit = Choose(Input{Tree: tree, Nodes: small, Demand: demand, Group: group})
	require.Nil(t, unfit)
	assert.Equal(t, Choice{Key: blockKey, Value: "b"}, plan.Required("w0")[0], "block b holds 4 more pairs, block a 3")

	// Once a gang of the group holds nodes, the group follows it whatever the fit.
	plan, unfit = Choose(Input{Tree: tree, Nodes: nodes, Demand: demand, Group: group, Shared: []string{"a0-0"}, SharedBy: "pcs-0"})
	require.Nil(t, unfit)
	assert.Equal(t, Choice{Key: blockKey, Value: "a"}, plan.Required("w0")[0])
}
