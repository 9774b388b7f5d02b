package preemption

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
