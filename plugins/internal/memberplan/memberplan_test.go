package memberplan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// rules is a Simulator: refuse[node] turns every member away; antiAffinity lets a node hold
// one member at most (what InterPodAffinity would say of members that repel each other).
type rules struct {
	refuse       map[int]bool
	antiAffinity bool
	onNode       map[int]int
	checks       int
}

func (r *rules) Fits(_, node int) bool {
	r.checks++
	return !r.refuse[node] && (!r.antiAffinity || r.onNode[node] == 0)
}

func (r *rules) Place(_, node int) {
	if r.onNode == nil {
		r.onNode = map[int]int{}
	}
	r.onNode[node]++
}

func members(n int) []types.UID {
	out := make([]types.UID, n)
	for i := range out {
		out[i] = types.UID(fmt.Sprintf("m%d", i))
	}
	return out
}

func nodes(cpu ...int64) []Node {
	out := make([]Node, len(cpu))
	for i, c := range cpu {
		out[i] = Node{Name: fmt.Sprintf("n%d", i), Free: capacity.Resources{MilliCPU: c, Memory: 1 << 40, Pods: 110}}
	}
	return out
}

var shape = capacity.Resources{MilliCPU: 1000, Memory: 1 << 20, Pods: 1}

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members int
		nodes   []Node
		rules   rules
		want    map[string]string // member -> node
	}{{
		name: "one member per node a round, in rank order", members: 3, nodes: nodes(4000, 4000, 4000, 4000),
		want: map[string]string{"m0": "n0", "m1": "n1", "m2": "n2"},
	}, {
		name: "another round over the nodes with room left", members: 5, nodes: nodes(2000, 1000, 2000),
		want: map[string]string{"m0": "n0", "m1": "n1", "m2": "n2", "m3": "n0", "m4": "n2"},
	}, {
		name: "a node without room is passed over", members: 2, nodes: nodes(500, 1000, 1000),
		want: map[string]string{"m0": "n1", "m1": "n2"},
	}, {
		name: "a node the filters refuse is not offered again", members: 4, nodes: nodes(4000, 4000),
		rules: rules{refuse: map[int]bool{0: true}},
		want:  map[string]string{"m0": "n1", "m1": "n1", "m2": "n1", "m3": "n1"},
	}, {
		name: "the filters see the members planned before: anti-affinity leaves the rest out", members: 3, nodes: nodes(4000, 4000),
		rules: rules{antiAffinity: true},
		want:  map[string]string{"m0": "n0", "m1": "n1"},
	}, {
		name: "more members than room: the rest are left to the ordinary path", members: 4, nodes: nodes(1000, 2000),
		want: map[string]string{"m0": "n0", "m1": "n1", "m2": "n1"},
	}, {
		name: "no nodes", members: 2,
		want: map[string]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Assign(members(tc.members), shape, tc.nodes, &tc.rules)
			gotNames := map[string]string{}
			for uid, n := range got {
				gotNames[string(uid)] = n
			}
			assert.Equal(t, tc.want, gotNames)
		})
	}
}

// Filters run once per member placed, plus once per node they refuse: a gang of 64 on 500
// nodes costs about 64 Filter calls, not 64 × 500.
func TestAssignChecksEachNodeOncePerMember(t *testing.T) {
	r := &rules{refuse: map[int]bool{1: true, 3: true}}
	got := Assign(members(64), shape, nodes(make500(4000)...), r)
	assert.Len(t, got, 64)
	assert.Equal(t, 64+2, r.checks)
}

func make500(cpu int64) []int64 {
	out := make([]int64, 500)
	for i := range out {
		out[i] = cpu
	}
	return out
}

func TestStore(t *testing.T) {
	var s Store
	s.Add("ns/g", 1, "w", map[types.UID]string{"a": "n1", "b": "n2"})
	s.Add("ns/g", 1, "r", map[types.UID]string{"c": "n3"})
	assert.True(t, s.Planned("ns/g", 1, "w"))
	assert.False(t, s.Planned("ns/g", 1, "x"), "a PodGroup nobody planned")
	assert.False(t, s.Planned("ns/g", 2, "w"), "another attempt has no plan")

	_, ok := s.Node("ns/g", 2, "a")
	assert.False(t, ok, "a plan is for its own attempt")
	n, ok := s.Node("ns/g", 1, "a")
	assert.True(t, ok)
	assert.Equal(t, "n1", n)
	_, ok = s.Node("ns/g", 1, "a")
	assert.False(t, ok, "a member is handed its node once; a retry goes the ordinary way")
	n, _ = s.Node("ns/g", 1, "c")
	assert.Equal(t, "n3", n, "another PodGroup's members join the attempt's plan")
	assert.False(t, s.Planned("ns/g", 1, "r"), "every member of r was handed its node")

	s.Add("ns/g", 2, "w", map[types.UID]string{"d": "n4"})
	_, ok = s.Node("ns/g", 1, "b")
	assert.False(t, ok, "a new attempt's plan replaces the old one")
	s.Forget("ns/g")
	assert.Equal(t, 0, s.Len())

	s.Add("ns/h", 1, "w", map[types.UID]string{"x": "n1"})
	s.Node("ns/h", 1, "x")
	assert.Equal(t, 0, s.Len(), "a plan whose every member was handed its node is dropped")
}

func TestStoreSignsEachMemberOncePerAttempt(t *testing.T) {
	var s Store
	signs := 0
	sign := func(sig string) func() []byte {
		return func() []byte { signs++; return []byte(sig) }
	}
	assert.Equal(t, []byte("a1"), s.Signature("ns/g", 1, "a", sign("a1")))
	assert.Equal(t, []byte("a1"), s.Signature("ns/g", 1, "a", sign("changed")), "the attempt remembers it")
	assert.Equal(t, 1, signs)
	assert.Equal(t, []byte("a2"), s.Signature("ns/g", 2, "a", sign("a2")), "a new attempt signs again")
	assert.Equal(t, 2, signs)

	s.Add("ns/g", 2, "w", map[types.UID]string{"b": "n1"})
	s.Node("ns/g", 2, "b")
	assert.Equal(t, 1, s.Len(), "remembered signatures keep the attempt's record after its last planned node")
	s.Forget("ns/g")
	assert.Equal(t, 0, s.Len())
}
