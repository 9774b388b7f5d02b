package gang

import (
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// intersectSpread keeps, of the nodes within the gang's domains (nil: any node), those its
// required replica spreads leave it.
func intersectSpread(within sets.Set[string], plan *placement.Plan) sets.Set[string] {
	req := plan.SpreadRequiredNodes()
	switch {
	case req == nil:
		return within
	case within == nil:
		return req
	}
	return within.Intersection(req)
}
