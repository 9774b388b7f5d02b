package gang

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
	"github.com/ai-dynamo/grove/plugins/internal/order"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// A big gang behind a stream of small ones would wait forever: whenever room frees, a small
// gang fits it before the big one has enough. Once a gang has been unplaceable for lack of room
// for GangArgs.ReservationDelay, the nodes it needs are reserved for it (gangcache.Reservation):
// gangs of the same or a lower priority keep off them, so what frees there adds up until the
// gang fits, while small gangs keep using the other nodes.

// reserveIfStarving reserves nodes for the gang when it is due, and returns what to add to its
// reason ("" when nothing is reserved for it).
func (p *Plugin) reserveIfStarving(pod *v1.Pod, key string, g gangcache.Gang, nodeInfos []fwk.NodeInfo) string {
	delay := p.args.ReservationDelay.Duration
	since := p.ledger.UnplaceableSince(key)
	now := time.Now()
	if delay <= 0 || since.IsZero() || now.Sub(since) < delay {
		return ""
	}
	nodes := p.nodesToReserve(pod, key, g, nodeInfos)
	if nodes == nil {
		// Not even the empty nodes hold the gang: holding them back would help nobody.
		p.release(key)
		return ""
	}
	holder := p.quorumEntry(key, pod)
	r := &gangcache.Reservation{Key: key, Priority: holder.Priority, Since: since, Nodes: nodes,
		Expires: now.Add(delay + p.args.MaxBackoff.Duration), Yields: p.reservationYields(holder)}
	if !p.gangs.Reserve(r, now) {
		return ""
	}
	schedmetrics.SetReservation(true)
	return fmt.Sprintf("; %d nodes are reserved for it", nodes.Len())
}

// nodesToReserve picks nodes that hold the gang's remaining quorum once emptied: inside the
// domains its pack constraints require (chosen as if every node were empty), the nodes with
// the most free room first, since they are the ones that fill up with the gang soonest; a
// scaling-group replica under a spread scoped to it only on the nodes it may use. nil when no
// such nodes exist.
func (p *Plugin) nodesToReserve(pod *v1.Pod, key string, g gangcache.Gang, nodeInfos []fwk.NodeInfo) sets.Set[string] {
	remaining := g.Quorum.Remaining()
	demands, classes := p.gangs.Demands(key, pod, g.Quorum.Names(), remaining)
	type candidate struct {
		ni      fwk.NodeInfo
		allowed capacity.Mask
		room    int64
	}
	largest := demands.Largest()
	var candidates []candidate
	for _, ni := range nodeInfos {
		if allowed := classes.Allowed(ni.Node()); allowed != 0 {
			candidates = append(candidates, candidate{ni: ni, allowed: allowed, room: capacity.NodeFree(ni).FitCount(largest.Shape)})
		}
	}
	// only holds, per PodGroup bound to some nodes more narrowly than the rest of the gang (a
	// scaling-group replica under a spread scoped to it), those nodes.
	var only map[string]sets.Set[string]
	if tree, spreads, sliced := placement.NewTree(&g.PodGang.Spec), p.gangs.Spreads(key), p.gangs.Slices(key); tree.Constrained() || len(spreads) > 0 || len(sliced) > 0 {
		nodes := make([]placement.Node, len(candidates))
		demand := make(map[string]capacity.Demand, len(demands))
		for i, c := range candidates {
			nodes[i] = placement.Node{Name: c.ni.Node().Name, Labels: c.ni.Node().Labels, Free: capacity.NodeAllocatable(c.ni), Excluded: ^c.allowed}
		}
		for _, d := range demands {
			demand[d.Group] = d
		}
		shared, sharedBy := p.gangs.SharedNodes(key)
		plan, unfit := placement.Choose(placement.Input{Tree: tree, Nodes: nodes, Demand: demand, Held: p.gangs.HeldNodes(key), Shared: shared, SharedBy: sharedBy,
			Spread: spreads, Slices: sliced})
		if unfit != nil {
			return nil
		}
		within := sets.New[string]()
		for _, name := range g.Quorum.Names() {
			allowed := plan.AllowedNodes(name)
			if allowed == nil {
				// A PodGroup free to go anywhere: pick its nodes among all candidates.
				within = nil
				break
			}
			within = within.Union(allowed)
		}
		within = intersectSpread(within, plan)
		if within != nil {
			candidates = slices.DeleteFunc(candidates, func(c candidate) bool { return !within.Has(c.ni.Node().Name) })
		}
		only = scopedNodes(demands, plan)
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.room, a.room), cmp.Compare(a.ni.Node().Name, b.ni.Node().Name))
	})
	// The PodGroups bound to nodes of their own are fitted first, each on its nodes; the rest
	// of the gang then shares what is left of every candidate.
	var rest capacity.Demands
	var parts []capacity.Demands
	for _, d := range demands {
		if only[d.Group] != nil {
			parts = append(parts, capacity.Demands{d})
		} else {
			rest = append(rest, d)
		}
	}
	if len(rest) > 0 {
		parts = append(parts, rest)
	}
	empty := make([]capacity.Resources, len(candidates))
	for i, c := range candidates {
		empty[i] = capacity.NodeAllocatable(c.ni)
	}
	nodes := sets.New[string]()
	for _, part := range parts {
		fitter := capacity.NewFitter(part)
		for i, c := range candidates {
			if fitter.Done() {
				break
			}
			if on := only[part[0].Group]; len(part) == 1 && on != nil && !on.Has(c.ni.Node().Name) {
				continue
			}
			before := fitter.Placed()
			fitter.Offer(&empty[i], c.allowed)
			if fitter.Placed() > before {
				nodes.Insert(c.ni.Node().Name)
			}
		}
		if !fitter.Done() {
			return nil
		}
	}
	return nodes
}

// reservationYields lets the waiting quorums ahead of the holder in the order of claims on room
// use its reserved nodes: the reservation is there so that gangs behind it do not starve it,
// not to leave nodes idle that a gang ahead of it could use now. Elastic members of gangs whose
// quorum holds nodes still keep off.
func (p *Plugin) reservationYields(holder order.Entry) func(string, int32) bool {
	return func(key string, prio int32) bool {
		g, ok := p.gangs.Get(key)
		if !ok || g.Quorum.Missing() != "" || g.Quorum.Held() {
			return false
		}
		e, _ := p.gangs.Entry(key, p.gangs.QuorumTier(key), prio)
		return order.Before(e, holder)
	}
}

// releaseIfNotWaiting ends the reservation of a gang that can no longer be attempted (its
// quorum lost members, or a member was gated): no attempt of it renews the reservation, which
// would otherwise keep the nodes idle until it expires.
func (p *Plugin) releaseIfNotWaiting(key string) {
	if r := p.gangs.Reservation(); r == nil || r.Key != key {
		return
	}
	if g, ok := p.gangs.Get(key); ok && g.Quorum.Missing() == "" {
		return
	}
	p.release(key)
}

// release ends the gang's reservation. The gangs it kept off its nodes are not told by any
// cluster event, so every pending gang member is brought back to the active queue.
func (p *Plugin) release(key string) {
	if r := p.gangs.Reservation(); r == nil || r.Key != key {
		return
	}
	p.gangs.Release(key)
	schedmetrics.SetReservation(false)
	p.activate(p.gangs.AllPending())
}

// Filter keeps members of other gangs off the nodes reserved for a starving gang, unless they
// outrank it, a planned member on its planned node (the scheduler may offer it a node its
// batching hinted at first), and an elastic member off the domain a waiting quorum ahead of it
// is pinned to (elasticWaits).
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := readState(state)
	if s == nil {
		return nil
	}
	if s.planned != "" && nodeInfo.Node().Name != s.planned {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("the gang's plan puts the pod on node %s", s.planned))
	}
	if gang, ok := s.keepOff[nodeInfo.Node().Name]; ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node is kept for PodGang %s, which waits for its quorum in the domain its placed members pin", gang))
	}
	r := p.gangs.Reservation()
	if r == nil {
		return nil
	}
	if r.Excludes(s.key, corev1helpers.PodPriority(pod), nodeInfo.Node().Name, time.Now()) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node is reserved for PodGang %s, which waits longer", r.Key))
	}
	return nil
}
