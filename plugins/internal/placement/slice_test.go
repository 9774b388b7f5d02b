package placement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

func TestMatchSlices(t *testing.T) {
	rooms := func(fits ...int64) []sliceRoom {
		out := make([]sliceRoom, len(fits))
		for i, f := range fits {
			out[i] = sliceRoom{value: string(rune('a' + i)), fits: f}
		}
		return out
	}
	needs := func(n ...int64) []sliceNeed {
		out := make([]sliceNeed, len(n))
		for i, x := range n {
			out[i] = sliceNeed{index: i, size: x, need: x}
		}
		return out
	}
	pinned := func(ns []sliceNeed, index int, value string) []sliceNeed {
		ns[index].pinned = value
		return ns
	}
	cases := []struct {
		name   string
		needs  []sliceNeed
		rooms  []sliceRoom
		want   map[int]string
		failed int // index of the slice without a domain, -1 for none
	}{
		{"16+16 on racks of 18, 18 and 10: two racks of their own", needs(16, 16), rooms(18, 18, 10), map[int]string{0: "a", 1: "b"}, -1},
		{"tightest rack first: 16 goes to the rack of 16, the other to 18", needs(16, 16), rooms(18, 14, 16), map[int]string{0: "c", 1: "a"}, -1},
		{"one rack of room: the second slice has none", needs(16, 16), rooms(18, 14), nil, 1},
		{"largest first keeps the big rack for the big slice", needs(5, 10), rooms(12, 6), map[int]string{0: "b", 1: "a"}, -1},
		{"12+12 on racks of 16: no rack is shared", needs(12, 12, 12), rooms(16, 16, 30), map[int]string{0: "a", 1: "b", 2: "c"}, -1},
		{"a pinned slice keeps its rack, the others avoid it", pinned(needs(1, 16), 0, "b"), rooms(18, 18), map[int]string{0: "b", 1: "a"}, -1},
		{"a pinned slice needing nothing still holds its rack", pinned([]sliceNeed{{index: 0, size: 16}, {index: 1, size: 16, need: 16}}, 0, "a"),
			rooms(18, 10), nil, 1},
		{"a pinned rack without room fails its slice", pinned(needs(4, 4), 1, "a"), rooms(3, 18), nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, failed := matchSlices(tc.needs, tc.rooms)
			if tc.failed >= 0 {
				require.NotNil(t, failed)
				assert.Equal(t, tc.failed, failed.index)
				assert.Nil(t, got)
				return
			}
			require.Nil(t, failed)
			assert.Equal(t, tc.want, got)
		})
	}
}

// ones are n nodes with one core free each: one pod per node.
func ones(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

func TestChooseSlices(t *testing.T) {
	// Block a has 32 nodes but as racks of 18 and 14; block b has racks of 18, 16 and 18.
	nodes := cluster(map[string][]int64{"a1": ones(18), "a2": ones(14), "b1": ones(18), "b2": ones(16), "b3": ones(18)})
	spec := v1alpha1.PodGangSpec{TopologyConstraint: required(blockKey), PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 32}}}
	demand := map[string]capacity.Demand{"w": {Group: "w", Shape: cores(1), Count: 32}}
	slicing := Slicing{Key: rackKey, Required: true, Sizes: []int64{16, 16}}
	in := Input{Tree: NewTree(&spec), Nodes: nodes, Demand: demand, Slices: map[string]Slicing{"w": slicing}}

	t.Run("the block whose racks hold the slices, each slice in a rack of its own", func(t *testing.T) {
		plan, unfit := Choose(in)
		require.Nil(t, unfit)
		assert.Equal(t, []Choice{{Key: blockKey, Value: "b"}}, plan.Required("w"), "block a holds 32 pods, but not as 16+16")
		s0, ok0 := plan.Slice("w", 0)
		s1, ok1 := plan.Slice("w", 1)
		require.True(t, ok0 && ok1)
		assert.Equal(t, "b2", s0.Value, "the tightest rack that holds 16")
		assert.Equal(t, "b1", s1.Value)
		assert.Equal(t, 16, s0.Nodes.Len())
		assert.Equal(t, 18, s1.Nodes.Len())
	})

	t.Run("without slices the tightest block is a, across its racks", func(t *testing.T) {
		plain := in
		plain.Slices = nil
		plan, unfit := Choose(plain)
		require.Nil(t, unfit)
		assert.Equal(t, []Choice{{Key: blockKey, Value: "a"}}, plan.Required("w"))
		_, ok := plan.Slice("w", 0)
		assert.False(t, ok)
	})

	few := cluster(map[string][]int64{"a1": ones(18), "a2": ones(14)})
	t.Run("a required slicing with one rack of room waits, naming the slices and the racks", func(t *testing.T) {
		short := in
		short.Nodes = few
		_, unfit := Choose(short)
		require.NotNil(t, unfit)
		assert.Equal(t, CauseSlice, unfit.Cause())
		assert.Equal(t, `in the best block, "a": PodGroup "w" needs slices of 16+16 pods, each whole within a rack of its own (topology.kubernetes.io/rack); `+
			`no rack is left for slice 1 (16 pods); racks with room: "a1" fits 18, "a2" fits 14`, unfit.Error())
	})

	t.Run("a preferred slicing that does not fit is placed as plain packing would", func(t *testing.T) {
		pref := in
		pref.Nodes = few
		s := slicing
		s.Required = false
		pref.Slices = map[string]Slicing{"w": s}
		plan, unfit := Choose(pref)
		require.Nil(t, unfit)
		assert.Equal(t, []Choice{{Key: blockKey, Value: "a"}}, plan.Required("w"))
		_, ok := plan.Slice("w", 1)
		assert.False(t, ok, "slices given up")

		pref.Nodes = nodes
		plan, unfit = Choose(pref)
		require.Nil(t, unfit)
		s1, ok := plan.Slice("w", 1)
		require.True(t, ok, "slices are tried first")
		assert.Equal(t, "b1", s1.Value)
	})

	t.Run("placed members pin their slice's rack; a replacement goes back to it", func(t *testing.T) {
		pinned := in
		s := slicing
		s.Held = map[int][]string{1: {"b3-0", "b3-1", "b3-2"}, 0: {"b1-0"}}
		pinned.Slices = map[string]Slicing{"w": s}
		pinned.Held = map[string][]string{"w": {"b3-0", "b3-1", "b3-2", "b1-0"}}
		pinned.Demand = map[string]capacity.Demand{"w": {Group: "w", Shape: cores(1), Count: 28}}
		plan, unfit := Choose(pinned)
		require.Nil(t, unfit)
		s0, _ := plan.Slice("w", 0)
		s1, _ := plan.Slice("w", 1)
		assert.Equal(t, "b1", s0.Value)
		assert.Equal(t, "b3", s1.Value)
	})

	t.Run("a slice pinned to a rack without room waits", func(t *testing.T) {
		pinned := in
		pinned.Nodes = cluster(map[string][]int64{"b1": ones(18), "b2": append(ones(2), make([]int64, 14)...), "b3": ones(18)})
		s := slicing
		s.Held = map[int][]string{0: {"b2-0"}}
		pinned.Slices = map[string]Slicing{"w": s}
		pinned.Held = map[string][]string{"w": {"b2-0"}}
		_, unfit := Choose(pinned)
		require.NotNil(t, unfit)
		assert.Contains(t, unfit.Error(), `slice 0 must stay in rack "b2", where its members run, which fits 2 of the 15 it still needs`)
	})
}
