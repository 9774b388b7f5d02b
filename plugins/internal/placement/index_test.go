package placement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// One index serves every gang planned over the same nodes while their room changes: each plan
// is the one made without it, block and rack chosen by the room of the moment.
func TestAnIndexServesPlansOverChangingRoom(t *testing.T) {
	spec := v1alpha1.PodGangSpec{
		PodGroups:          []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}},
		TopologyConstraint: required(blockKey),
		TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{
			{Name: "r", PodGroupNames: []string{"w"}, TopologyConstraint: required(rackKey)}},
	}
	demand := map[string]capacity.Demand{"w": {Group: "w", Shape: cores(1), Count: 4}}
	rooms := []map[string][]int64{
		{"a1": {2, 2}, "a2": {1, 1}, "b1": {4, 4}},
		{"a1": {1, 1}, "a2": {1, 1}, "b1": {2, 2}},
		{"a1": {4, 0}, "a2": {2, 2}, "b1": {0, 0}},
	}
	index := NewIndex(cluster(rooms[0]))
	for i, room := range rooms {
		without, unfit := Choose(Input{Tree: NewTree(&spec), Nodes: cluster(room), Demand: demand})
		require.Nil(t, unfit, "room %d", i)
		with, unfit := Choose(Input{Tree: NewTree(&spec), Nodes: cluster(room), Demand: demand, Index: index})
		require.Nil(t, unfit, "room %d", i)
		assert.Equal(t, without.Required("w"), with.Required("w"), "room %d", i)
		assert.Equal(t, without.AllowedNodes("w"), with.AllowedNodes("w"), "room %d", i)
	}
	d := index.domainsOf(rackKey)
	assert.Equal(t, []string{"a1", "a2", "b1"}, d.values)
	assert.Equal(t, map[string][]int{"a1": {0, 1}, "a2": {2, 3}, "b1": {4, 5}}, d.byValue)
}
