package topology

import (
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// reuseFor is the earlier placement gang g's spec.reuseReservationRef names: the named PodGang's
// status.lastPlacement, which outlives its pods and a scheduler restart, or, when it records none
// yet, the nodes its members hold now. nil without a reference or a placement.
func (p *Plugin) reuseFor(g gangcache.Gang) *placement.Reuse {
	ref := g.PodGang.Spec.ReuseReservationRef
	if ref == nil {
		return nil
	}
	from := ref.Namespace + "/" + ref.Name
	earlier := g
	if from != gangcache.KeyOf(g.PodGang) {
		var ok bool
		if earlier, ok = p.gangs.Get(from); !ok {
			return nil
		}
	}
	var nodes []string
	if lp := earlier.PodGang.Status.LastPlacement; lp != nil {
		nodes = lp.Nodes
	}
	if len(nodes) == 0 && from != gangcache.KeyOf(g.PodGang) {
		names := sets.New[string]()
		for _, held := range p.gangs.BoundNodes(from) {
			names.Insert(held...)
		}
		nodes = sets.List(names)
	}
	if len(nodes) == 0 {
		return nil
	}
	return &placement.Reuse{Nodes: nodes, From: ref.Name,
		Required: g.PodGang.Annotations[common.AnnotationReuseReservation] == "Required"}
}

// treeFor reads the gang's pack constraints; with reuse required, its gang-wide preferred keys
// are required (placement.RequireReuse).
func treeFor(g gangcache.Gang, reuse *placement.Reuse) *placement.Tree {
	if reuse != nil && reuse.Required {
		return placement.NewTree(placement.RequireReuse(&g.PodGang.Spec))
	}
	return placement.NewTree(&g.PodGang.Spec)
}

// reuseNodes are the earlier placement's nodes a member should go back to where it fits.
func reuseNodes(reuse *placement.Reuse) sets.Set[string] {
	if reuse == nil {
		return nil
	}
	return sets.New(reuse.Nodes...)
}
