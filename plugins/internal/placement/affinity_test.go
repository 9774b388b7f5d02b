package placement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

func roles(name string, required bool, members ...string) v1alpha1.RoleAffinityGroup {
	g := v1alpha1.RoleAffinityGroup{Name: name, TopologyKey: rackKey, Required: required}
	for _, m := range members {
		g.Members = append(g.Members, v1alpha1.RoleAffinityMember{Name: m, PodGroupNames: []string{m}})
	}
	return g
}

// TestChooseWithRoleGroups: the racks prefill and decode (two 4-core pods each) get under
// affinity and anti-affinity groups, required and preferred.
func TestChooseWithRoleGroups(t *testing.T) {
	type want struct {
		// prefill, decode are the required racks ("" = none); preferred* the preferred ones.
		prefill, decode                   string
		preferredPrefill, preferredDecode string
		cause, unfit                      string
	}
	cases := []struct {
		name     string
		racks    map[string][]int64
		free     map[string]int64
		held     map[string][]string
		demand   map[string]int64
		together []v1alpha1.RoleAffinityGroup
		apart    []v1alpha1.RoleAffinityGroup
		want     want
	}{
		{
			name:     "together, required: the one rack that holds both roles",
			racks:    map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4, 4}, "b1": {4, 4}},
			together: []v1alpha1.RoleAffinityGroup{roles("pd", true, "prefill", "decode")},
			want:     want{prefill: "a2", decode: "a2"},
		},
		{
			name:     "together, required: no rack holds both: waits, naming the group",
			racks:    map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4}, "b1": {4, 4}},
			together: []v1alpha1.RoleAffinityGroup{roles("pd", true, "prefill", "decode")},
			want: want{cause: CauseRoleAffinity, unfit: `roles prefill, decode of affinity group "pd" needs 4 pods of 4 CPU within one rack ` +
				`(topology.kubernetes.io/rack); the best rack, "a2", fits 3; the gang would fit without its required affinity group "pd" (rack)`},
		},
		{
			name:     "together, required: short of room anyway: a plain shortage, not the group",
			racks:    map[string][]int64{"a1": {4, 4}, "a2": {4}},
			together: []v1alpha1.RoleAffinityGroup{roles("pd", true, "prefill", "decode")},
			want:     want{cause: "no_domain"},
		},
		{
			name:     "together, preferred: no rack holds both: placed anyway, steered to the rack that holds most",
			racks:    map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4}, "b1": {4, 4}},
			together: []v1alpha1.RoleAffinityGroup{roles("pd", false, "prefill", "decode")},
			want:     want{preferredPrefill: "a2", preferredDecode: "a2"},
		},
		{
			name:  "apart, required: each role in a rack of its own, tightest first",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4, 4}},
			apart: []v1alpha1.RoleAffinityGroup{roles("pd", true, "prefill", "decode")},
			want:  want{prefill: "a1", decode: "a2"},
		},
		{
			name:  "apart, required: one rack holds both but they may not share it: waits, naming the group",
			racks: map[string][]int64{"a1": {4, 4, 4, 4}, "a2": {4}},
			apart: []v1alpha1.RoleAffinityGroup{roles("pd", true, "prefill", "decode")},
			want: want{cause: CauseRoleAffinity, unfit: `role "decode" of anti-affinity group "pd" needs 2 pods of 4 CPU within one rack ` +
				`(topology.kubernetes.io/rack); the best rack, "a2", fits 1; the gang would fit without its required anti-affinity group "pd" (rack)`},
		},
		{
			name:   "apart, required: a role already placed keeps its rack from the other, which comes first by size",
			racks:  map[string][]int64{"a1": {4, 4, 4}, "a2": {4, 4, 4, 4}},
			free:   map[string]int64{"a1-0": 0},
			held:   map[string][]string{"decode": {"a1-0"}},
			demand: map[string]int64{"prefill": 2, "decode": 1},
			apart:  []v1alpha1.RoleAffinityGroup{roles("pd", true, "prefill", "decode")},
			want:   want{prefill: "a2", decode: "a1"},
		},
		{
			name:  "apart, preferred: one rack only: they share it",
			racks: map[string][]int64{"a1": {4, 4, 4, 4}},
			apart: []v1alpha1.RoleAffinityGroup{roles("pd", false, "prefill", "decode")},
			want:  want{preferredPrefill: "a1", preferredDecode: "a1"},
		},
		{
			name:  "apart, preferred: two racks: each role its own",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4, 4, 4}},
			apart: []v1alpha1.RoleAffinityGroup{roles("pd", false, "prefill", "decode")},
			want:  want{preferredPrefill: "a1", preferredDecode: "a2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "prefill", MinReplicas: 2}, {Name: "decode", MinReplicas: 2}},
				AffinityGroups: tc.together, AntiAffinityGroups: tc.apart}
			nodes := cluster(tc.racks)
			for i := range nodes {
				if c, ok := tc.free[nodes[i].Name]; ok {
					nodes[i].Free.MilliCPU = c * 1000
				}
			}
			demand := map[string]capacity.Demand{}
			for _, g := range []string{"prefill", "decode"} {
				n := int64(2)
				if c, ok := tc.demand[g]; ok {
					n = c
				}
				demand[g] = capacity.Demand{Group: g, Shape: cores(4), Count: n}
			}
			plan, unfit := Choose(Input{Tree: NewTree(&spec), Nodes: nodes, Demand: demand, Held: tc.held})
			if tc.want.cause != "" {
				require.NotNil(t, unfit)
				assert.Equal(t, tc.want.cause, unfit.Cause(), unfit.Error())
				if tc.want.unfit != "" {
					assert.Equal(t, tc.want.unfit, unfit.Error())
				}
				return
			}
			require.Nil(t, unfit, "unfit: %v", unfit)
			rack := func(group string) string {
				if r := plan.Required(group); len(r) > 0 {
					return r[len(r)-1].Value
				}
				return ""
			}
			pref := func(group string) string {
				c, _ := plan.Preferred(group)
				return c.Value
			}
			assert.Equal(t, tc.want, want{prefill: rack("prefill"), decode: rack("decode"),
				preferredPrefill: pref("prefill"), preferredDecode: pref("decode")})
		})
	}
}

// TestRoleSetsNest: a role set encloses the sets wholly inside it (a scaling-group replica's
// group config, a PodGroup's own set) and lies inside the smallest set that holds it.
func TestRoleSetsNest(t *testing.T) {
	spec := v1alpha1.PodGangSpec{
		TopologyConstraint: required(blockKey),
		PodGroups: []v1alpha1.PodGroup{{Name: "router", TopologyConstraint: required(hostKey)},
			{Name: "w-0-prefill"}, {Name: "w-0-decode"}, {Name: "frontend"}},
		TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{
			{Name: "w-0", PodGroupNames: []string{"w-0-prefill", "w-0-decode"}, TopologyConstraint: required(hostKey)}},
		AffinityGroups: []v1alpha1.RoleAffinityGroup{{Name: "pd", TopologyKey: rackKey, Required: true, Members: []v1alpha1.RoleAffinityMember{
			{Name: "router", PodGroupNames: []string{"router"}}, {Name: "w", PodGroupNames: []string{"w-0-prefill", "w-0-decode"}}}}},
		AntiAffinityGroups: []v1alpha1.RoleAffinityGroup{{Name: "apart", TopologyKey: hostKey, Required: true, Members: []v1alpha1.RoleAffinityMember{
			{Name: "router", PodGroupNames: []string{"router"}}, {Name: "frontend", PodGroupNames: []string{"frontend"}}}}},
	}
	tree := NewTree(&spec)
	ids := func(group string) []string {
		var out []string
		for _, s := range tree.Chain(group) {
			out = append(out, s.ID)
		}
		return out
	}
	assert.Equal(t, []string{"podgang", "affinity/pd", "config/w-0"}, ids("w-0-prefill"))
	assert.Equal(t, []string{"podgang", "affinity/pd", "apart/apart/router", "group/router"}, ids("router"))
	assert.Equal(t, []string{"podgang", "apart/apart/frontend"}, ids("frontend"))
	assert.Nil(t, NewTree(withoutRoleGroups(&spec)).withoutRoles, "a tree without role groups needs no second one")
}

// TestPreferredApartHoldsNestedRequiredDomains: the scaling-group replicas a base PodGang holds
// (d0, d1, d2: each a PodGroup packed into a rack by its group config) kept apart by a
// preferred anti-affinity group. Each member's preferred rack must also be where its nested
// required rack is chosen; otherwise tightest fit puts every replica in the first rack, which
// holds two of them. Racks of two 4-core nodes; each replica asks for 2 pods of 2 cores.
func TestPreferredApartHoldsNestedRequiredDomains(t *testing.T) {
	groups := []string{"d0", "d1", "d2"}
	spec := v1alpha1.PodGangSpec{AntiAffinityGroups: []v1alpha1.RoleAffinityGroup{{Name: "sg", TopologyKey: rackKey}}}
	demand := map[string]capacity.Demand{}
	for _, g := range groups {
		spec.PodGroups = append(spec.PodGroups, v1alpha1.PodGroup{Name: g, MinReplicas: 2})
		spec.TopologyConstraintGroupConfigs = append(spec.TopologyConstraintGroupConfigs,
			v1alpha1.TopologyConstraintGroupConfig{Name: "sg-" + g, PodGroupNames: []string{g}, TopologyConstraint: required(rackKey)})
		spec.AntiAffinityGroups[0].Members = append(spec.AntiAffinityGroups[0].Members, v1alpha1.RoleAffinityMember{Name: "sg-" + g, PodGroupNames: []string{g}})
		demand[g] = capacity.Demand{Group: g, Shape: cores(2), Count: 2}
	}
	cases := []struct {
		name  string
		racks map[string][]int64
		held  map[string][]string
		// want: per replica, its required rack, which is also its preferred one.
		want map[string]string
	}{
		{
			name:  "enough racks: one replica per rack",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4}, "a3": {4, 4}, "a4": {4, 4}},
			want:  map[string]string{"d0": "a1", "d1": "a2", "d2": "a3"},
		},
		{
			name:  "two racks for three replicas: the third shares, each still packed in one rack",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4}},
			want:  map[string]string{"d0": "a1", "d1": "a2", "d2": "a1"},
		},
		{
			name:  "a replica already placed keeps its rack from the others",
			racks: map[string][]int64{"a1": {4, 4}, "a2": {4, 4}, "a3": {4, 4}},
			held:  map[string][]string{"d1": {"a1-0"}},
			want:  map[string]string{"d0": "a2", "d1": "a1", "d2": "a3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Tree: NewTree(&spec), Nodes: cluster(tc.racks), Demand: demand, Held: tc.held}
			if tc.held != nil {
				in.Demand = map[string]capacity.Demand{"d0": demand["d0"], "d1": {Group: "d1", Shape: cores(2), Count: 1}, "d2": demand["d2"]}
			}
			plan, unfit := Choose(in)
			require.Nil(t, unfit, "unfit: %v", unfit)
			got := map[string]string{}
			for _, g := range groups {
				r := plan.Required(g)
				require.Len(t, r, 1, g)
				got[g] = r[0].Value
				if p, ok := plan.Preferred(g); ok {
					assert.Equal(t, r[0], p, "%s: its required rack is its preferred one", g)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
