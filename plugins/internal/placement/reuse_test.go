package placement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

func TestReuseEarlierPlacement(t *testing.T) {
	gangRack := v1alpha1.PodGangSpec{TopologyConstraint: required(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}}
	prefRack := v1alpha1.PodGangSpec{TopologyConstraint: preferred(rackKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}}
	shared := gangRack
	shared.TopologyConstraint = preferred(hostKey)
	shared.SharedTopologyConstraint = &v1alpha1.SharedTopologyConstraint{Group: "base", PackConstraint: required(rackKey).PackConstraint}
	demand := map[string]capacity.Demand{"w": {Group: "w", Shape: cores(4), Count: 4}}
	// a2 is the tighter fit; the gang ran in a1 before.
	roomy := cluster(map[string][]int64{"a1": {8, 8, 8, 8}, "a2": {4, 4, 4, 4}})
	// a1 has room for 2 of the 4 members now.
	full := cluster(map[string][]int64{"a1": {4, 4, 0, 0}, "a2": {4, 4, 4, 4}})
	earlier := []string{"a1-0", "a1-1", "a1-2", "a1-3"}
	cases := []struct {
		name      string
		spec      v1alpha1.PodGangSpec
		nodes     []Node
		reuse     *Reuse
		held      map[string][]string
		ruledOut  map[Choice][]string
		rack      string // required rack chosen ("" when none)
		preferred string // preferred rack chosen
		cause     string // Unfit.Cause, "" when it fits
	}{
		{name: "without reuse the tightest rack wins", spec: gangRack, nodes: roomy, rack: "a2"},
		{name: "the earlier rack wins over a tighter one", spec: gangRack, nodes: roomy, reuse: &Reuse{Nodes: earlier, From: "g"}, rack: "a1"},
		{name: "preferred reuse moves when the earlier rack is full", spec: gangRack, nodes: full, reuse: &Reuse{Nodes: earlier, From: "g"}, rack: "a2"},
		{name: "required reuse waits when the earlier rack is full", spec: gangRack, nodes: full,
			reuse: &Reuse{Nodes: earlier, From: "g", Required: true}, cause: CauseReuseRequired},
		{name: "members already placed pin before the earlier rack", spec: gangRack, nodes: roomy,
			reuse: &Reuse{Nodes: earlier, From: "g"}, held: map[string][]string{"w": {"a2-0"}}, rack: "a2"},
		{name: "a rack a filter ruled out is not reused", spec: gangRack, nodes: roomy, reuse: &Reuse{Nodes: earlier, From: "g"},
			ruledOut: map[Choice][]string{{Key: rackKey, Value: "a1"}: {"NodeAffinity"}}, rack: "a2"},
		{name: "the earlier preferred rack is preferred again", spec: prefRack, nodes: roomy, reuse: &Reuse{Nodes: earlier, From: "g"}, preferred: "a1"},
		{name: "required reuse turns the preferred rack required", spec: *RequireReuse(&prefRack), nodes: full,
			reuse: &Reuse{Nodes: earlier, From: "g", Required: true}, cause: CauseReuseRequired},
		{name: "a shared rack nobody of the group holds goes back to the earlier one", spec: shared, nodes: roomy,
			reuse: &Reuse{Nodes: earlier, From: "g"}, rack: "a1"},
		{name: "earlier nodes that are gone are ignored", spec: gangRack, nodes: roomy, reuse: &Reuse{Nodes: []string{"gone-0"}, From: "g"}, rack: "a2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, unfit := Choose(Input{Tree: NewTree(&tc.spec), Nodes: tc.nodes, Demand: demand, Held: tc.held, RuledOut: tc.ruledOut, Reuse: tc.reuse})
			if tc.cause != "" {
				require.NotNil(t, unfit)
				assert.Equal(t, tc.cause, unfit.Cause())
				assert.Contains(t, unfit.Error(), `within rack "a1"`)
				assert.Contains(t, unfit.Error(), "where PodGang g was placed before")
				return
			}
			require.Nil(t, unfit)
			var rack string
			if req := plan.Required("w"); len(req) > 0 {
				rack = req[0].Value
			}
			assert.Equal(t, tc.rack, rack)
			if tc.preferred != "" {
				c, ok := plan.Preferred("w")
				require.True(t, ok)
				assert.Equal(t, tc.preferred, c.Value)
			}
		})
	}
}

func TestRequireReuseKeepsRequiredKeys(t *testing.T) {
	spec := v1alpha1.PodGangSpec{TopologyConstraint: required(blockKey), PodGroups: []v1alpha1.PodGroup{{Name: "w"}}}
	spec.TopologyConstraint.PackConstraint.Preferred = preferred(rackKey).PackConstraint.Preferred
	out := RequireReuse(&spec)
	assert.Equal(t, rackKey, out.TopologyConstraint.Required())
	assert.Empty(t, out.TopologyConstraint.Preferred())
	assert.Equal(t, rackKey, spec.TopologyConstraint.Preferred(), "the PodGang's own spec is left alone")
	plain := v1alpha1.PodGangSpec{TopologyConstraint: required(blockKey), PodGroups: []v1alpha1.PodGroup{{Name: "w"}}}
	assert.Equal(t, blockKey, RequireReuse(&plain).TopologyConstraint.Required())
}
