package preemption

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Room freed counts only where each slice finds a rack of its own: evicting the cheapest pod
// would give four free nodes, but as 3 + 1, which holds no 2 + 2; the victims are the pods of a
// rack that then holds the second slice.
func TestSelectFreesRoomForEachSlice(t *testing.T) {
	tree := placement.NewTree(&v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 4}}})
	problem := func(slices map[string]placement.Slicing) Problem {
		return Problem{
			Nodes: []placement.Node{node("n0", "r1", 1000), node("n1", "r1", 1000), node("n2", "r1", 1000),
				node("n3", "r2", 0), node("n4", "r3", 0), node("n5", "r3", 0)},
			Demand: pods(4), Tree: tree, Slices: slices,
			Units: []Unit{unit("x", 1, on("n3", 1000)), unit("y", 2, on("n4", 1000)), unit("z", 2, on("n5", 1000))},
		}
	}
	victims := func(p Problem) []string {
		choice, _ := Select(p)
		var out []string
		for _, u := range choice.Victims {
			out = append(out, p.Units[u].Key)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"x"}, victims(problem(nil)), "without slices the cheapest pod is enough")
	assert.ElementsMatch(t, []string{"y", "z"}, victims(problem(map[string]placement.Slicing{
		"w": {Key: "rack", Required: true, Sizes: []int64{2, 2}}})))
}
