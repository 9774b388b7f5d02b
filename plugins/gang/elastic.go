package gang

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/order"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Quorums before elastic pods. A member beyond its PodGroup's minReplicas (an elastic pod of a
// gang whose quorum has nodes) is best effort: it must not take room another gang of the same
// or a higher priority needs to reach its quorum. A quorum waits from the moment its members
// are in the scheduling queue (they passed every PreEnqueue plugin), not only once an attempt
// found it short of room: when room appears in a cluster that had none, the first gang
// attempted would otherwise hand it to its elastic pods before the next gang is even tried.
// So while such a gang waits for its quorum, elastic pods wait too — unless that gang could not
// fit even on empty nodes (holding room back would help nobody), is held out of the queue (a
// missing ResourceClaim, a back-off of another plugin), or is mid-attempt and its remaining
// members no longer fit the free room (the attempt is failing). Quorums are placed in queue
// order (priority, then age) as room appears; elastic pods get what is left once no quorum
// waits.

// elasticWaits returns why the elastic member pod of gang key may not be placed now ("" when
// it may): a waiting quorum ahead of its elastic tier (the same or a higher priority) that
// could use the room. A waiting quorum whose members already placed pin it to a domain (a
// replacement for a member lost with its node) can only use the room inside that domain: the
// elastic member is then not held back but kept off that domain's nodes (keepOff, node → the
// waiting gang), so that one failed node does not stall elastic pods cluster-wide.
func (p *Plugin) elasticWaits(pod *v1.Pod, key string, nodeInfos []fwk.NodeInfo) (why string, keepOff map[string]string) {
	for _, w := range p.gangs.WaitingAhead(p.entry(key, order.Elastic, pod), nil) {
		if !p.quorumWaits(w, nodeInfos) {
			continue
		}
		if pinned := p.pinnedNodes(w, nodeInfos); pinned != nil {
			if keepOff == nil {
				keepOff = map[string]string{}
			}
			for n := range pinned {
				if _, ok := keepOff[n]; !ok {
					keepOff[n] = w.Key
				}
			}
			continue
		}
		return fmt.Sprintf("pod %s is beyond its PodGroup's minReplicas; it waits while PodGang %s, of the same or a higher priority, waits for its quorum: %s",
			pod.Name, w.Key, w.Gang.Quorum.Progress()), nil
	}
	return "", keepOff
}

// pinnedNodes returns the nodes the waiting quorum w can use when its members already placed
// (or the other PodGangs of its group) pin every PodGroup it still needs to a required domain,
// the innermost pinned one; nil when some PodGroup it needs could go elsewhere.
func (p *Plugin) pinnedNodes(w gangcache.Waiting, nodeInfos []fwk.NodeInfo) sets.Set[string] {
	tree := placement.NewTree(&w.Gang.PodGang.Spec)
	if !tree.Constrained() {
		return nil
	}
	held := p.gangs.HeldNodes(w.Key)
	shared, sharedBy := p.gangs.SharedNodes(w.Key)
	if len(held) == 0 && len(shared) == 0 {
		return nil
	}
	remaining := w.Gang.Quorum.Remaining()
	demands, classes := p.gangs.Demands(w.Key, w.Pod, w.Gang.Quorum.Names(), remaining)
	demand := make(map[string]capacity.Demand, len(demands))
	for _, d := range demands {
		demand[d.Group] = d
	}
	// The domains as if every node were empty: pinned sets keep their pinned value whatever
	// room they have now.
	nodes := make([]placement.Node, 0, len(nodeInfos))
	for _, ni := range nodeInfos {
		allowed := classes.Allowed(ni.Node())
		if allowed == 0 {
			continue
		}
		nodes = append(nodes, placement.Node{Name: ni.Node().Name, Labels: ni.Node().Labels, Free: capacity.NodeAllocatable(ni), Excluded: ^allowed})
	}
	plan, unfit := placement.Choose(placement.Input{Tree: tree, Nodes: nodes, Demand: demand, Held: held, Shared: shared, SharedBy: sharedBy,
		Slices: p.gangs.Slices(w.Key)})
	if unfit != nil {
		return nil
	}
	out := sets.New[string]()
	for _, group := range w.Gang.Quorum.Names() {
		if remaining[group] == 0 {
			continue
		}
		// The required sets of the group's chain, outermost first, as plan.Required lists
		// their choices; the innermost one a placed member pins bounds where it can go.
		var within []placement.Choice
		choices := plan.Required(group)
		i := 0
		for _, set := range tree.Chain(group) {
			if set.Required == "" {
				continue
			}
			if i < len(choices) && pinnedSet(set, held, shared) {
				within = choices[:i+1]
			}
			i++
		}
		if within == nil {
			return nil
		}
		for _, n := range nodes {
			if inDomains(n.Labels, within) {
				out.Insert(n.Name)
			}
		}
	}
	return out
}

// pinnedSet reports whether placed members pin set's required domain: a member of one of its
// PodGroups holds a node, or, for the shared set, a member of another PodGang of the group.
func pinnedSet(set *placement.Set, held map[string][]string, shared []string) bool {
	if set.ID == placement.SharedSetID && len(shared) > 0 {
		return true
	}
	for _, g := range set.Groups {
		if len(held[g]) > 0 {
			return true
		}
	}
	return false
}

func inDomains(labels map[string]string, within []placement.Choice) bool {
	for _, c := range within {
		if labels[c.Key] != c.Value {
			return false
		}
	}
	return true
}

// entry is where gang key's claim of tier stands in the order of claims on room (pod, a member,
// gives its priority while no quorum member's is known).
func (p *Plugin) entry(key string, tier order.Tier, pod *v1.Pod) order.Entry {
	e, _ := p.gangs.Entry(key, tier, corev1helpers.PodPriority(pod))
	return e
}

// quorumEntry is where gang key's quorum stands in the order.
func (p *Plugin) quorumEntry(key string, pod *v1.Pod) order.Entry {
	return p.entry(key, p.gangs.QuorumTier(key), pod)
}

// quorumWaits reports whether the waiting quorum w holds elastic pods back.
func (p *Plugin) quorumWaits(w gangcache.Waiting, nodeInfos []fwk.NodeInfo) bool {
	if w.Gang.Quorum.Assumed() > 0 {
		// Mid-attempt: it was checked to fit when the attempt started; it holds the room only
		// while its remaining members still fit it (a failing attempt must not, or elastic
		// pods would wait on a gang that cannot finish).
		return p.wholeGangFits(w.Pod, w.Key, w.Gang.Quorum, nodeInfos) == "" && p.fitsDomains(w.Pod, w.Key, w.Gang, nodeInfos, false)
	}
	if !p.gangs.Queued(w.Key) && p.ledger.UnplaceableSince(w.Key).IsZero() {
		// Neither in the queue nor found short of room by this scheduler.
		return false
	}
	if p.gangs.RefusedSinceRoomChanged(w.Key) {
		// A filter refused it with the room as it is: it cannot use the room until the room
		// changes. (A quorum short of room keeps holding it back, so that what frees up adds
		// up for it.)
		return false
	}
	if why := p.heldAtPreEnqueue(w.Pod); why != "" {
		// Another plugin keeps it out of the queue: it cannot use the room now.
		return false
	}
	// Not even the empty nodes hold it: it cannot use the room now either.
	return p.nodesToReserve(w.Pod, w.Key, w.Gang, nodeInfos) != nil
}

// preEnqueueLister is the framework's view of its PreEnqueue plugins.
type preEnqueueLister interface {
	PreEnqueuePlugins() []fwk.PreEnqueuePlugin
}

// heldAtPreEnqueue returns why a PreEnqueue plugin other than this one keeps pod out of the
// active queue now ("" when none does). The gang's own back-off does not count: a gang that
// backs off still waits for its quorum.
func (p *Plugin) heldAtPreEnqueue(pod *v1.Pod) string {
	l, ok := p.handle.(preEnqueueLister)
	if !ok {
		return ""
	}
	for _, pl := range l.PreEnqueuePlugins() {
		if pl.Name() == Name {
			continue
		}
		if st := pl.PreEnqueue(p.ctx, pod); !st.IsSuccess() {
			return fmt.Sprintf("%s: %s", pl.Name(), st.Message())
		}
	}
	return ""
}

// Base quorums before scale-out. A scaled PodGang (a scaling-group replica beyond the group's
// minAvailable, labelled with its base PodGang) is the PodCliqueSet replica's extra capacity: it
// waits while a base PodGang of the same PodCliqueSet ahead of it in the order (order.ScaleOut
// comes after order.Base) waits for its quorum and could use the room (as quorumWaits judges
// for elastic pods). Without this, the scaled gangs of a replica placed first, ungated once
// their base gang was, take room that arrives node by node while the next replica's base gang
// sits out a back-off, and that replica gets nothing (upstream's GS-10 and GS-12: every
// replica's minimum before any replica's scale-out). It waits only on gangs ahead of it, so
// the waits cannot go round in a circle.

// scaleOutWaits returns why gang key, a scaled PodGang starting an attempt, waits for a base
// quorum of its PodCliqueSet ("" when it does not).
func (p *Plugin) scaleOutWaits(pod *v1.Pod, key string, g gangcache.Gang, nodeInfos []fwk.NodeInfo) string {
	labels := g.PodGang.Labels
	if labels[common.LabelBasePodGang] == "" || labels[common.LabelPartOfKey] == "" {
		return ""
	}
	baseOfThisPCS := func(pg *v1alpha1.PodGang) bool {
		return pg.Namespace == g.PodGang.Namespace && pg.Labels[common.LabelBasePodGang] == "" &&
			pg.Labels[common.LabelPartOfKey] == labels[common.LabelPartOfKey]
	}
	for _, w := range p.gangs.WaitingAhead(p.entry(key, order.ScaleOut, pod), baseOfThisPCS) {
		if !p.quorumWaits(w, nodeInfos) {
			continue
		}
		return fmt.Sprintf("PodGang %s scales its replica out; it waits while base PodGang %s of the same PodCliqueSet, of the same or a higher priority, waits for its quorum: %s",
			key, w.Key, w.Gang.Quorum.Progress())
	}
	return ""
}

// Quorums in order. A gang whose attempt starts lets a waiting quorum strictly ahead of it in the
// order of claims on room (plugins/internal/order) go first when that quorum fits the free room
// now: the scheduler's per-pod back-off can hold the older gang's pods back just when
// room appears, and a younger gang would take it. Only a few gangs ahead are looked at, and
// none that backs off after a failed attempt of its own, so a gang never waits on one that
// cannot be placed.
const aheadChecked = 4

// quorumAheadFits returns why gang key, starting an attempt, lets another quorum go first
// ("" when it does not).
func (p *Plugin) quorumAheadFits(pod *v1.Pod, key string, nodeInfos []fwk.NodeInfo) string {
	checked := 0
	for _, w := range p.gangs.WaitingAhead(p.quorumEntry(key, pod), nil) {
		if _, _, backingOff := p.ledger.BackingOff(w.Key); backingOff || w.Gang.Quorum.Assumed() > 0 {
			// Backing off, or mid-attempt (its members wait at the barrier, maybe for a pod
			// another scheduler places): waiting on it could wait forever.
			continue
		}
		if p.gangs.RefusedSinceRoomChanged(w.Key) {
			// Counted capacity says it fits, but a filter refused it with the room as it is:
			// deferring to it and waking it up would only make the two gangs wake each other
			// in a loop.
			continue
		}
		if !p.gangs.Queued(w.Key) && p.ledger.UnplaceableSince(w.Key).IsZero() || p.heldAtPreEnqueue(w.Pod) != "" {
			// Neither in the queue nor found short of room, or kept out of the queue by
			// another plugin: it would not take the room.
			continue
		}
		if checked++; checked > aheadChecked {
			break
		}
		if p.wholeGangFits(w.Pod, w.Key, w.Gang.Quorum, nodeInfos) == "" && p.fitsDomains(w.Pod, w.Key, w.Gang, nodeInfos, false) {
			// Its pods may sit out a back-off in the queue: bring them to the front.
			p.activate(p.gangs.Pending(w.Key))
			return fmt.Sprintf("PodGang %s, ahead of this gang in the queue, waits for its quorum and fits the free room: it is placed first", w.Key)
		}
	}
	return ""
}

// fitsDomains reports whether the gang's remaining quorum fits its required domains, on the
// nodes' free room or, with empty, on the nodes as if empty. Gangs without pack constraints
// always do (capacity alone is wholeGangFits' to judge).
func (p *Plugin) fitsDomains(pod *v1.Pod, key string, g gangcache.Gang, nodeInfos []fwk.NodeInfo, empty bool) bool {
	tree := placement.NewTree(&g.PodGang.Spec)
	if !tree.Constrained() {
		return true
	}
	demands, classes := p.gangs.Demands(key, pod, g.Quorum.Names(), g.Quorum.Remaining())
	demand := make(map[string]capacity.Demand, len(demands))
	for _, d := range demands {
		demand[d.Group] = d
	}
	r, prio, now := p.gangs.Reservation(), corev1helpers.PodPriority(pod), time.Now()
	nodes := make([]placement.Node, 0, len(nodeInfos))
	for _, ni := range nodeInfos {
		allowed := classes.Allowed(ni.Node())
		if allowed == 0 || !empty && r.Excludes(key, prio, ni.Node().Name, now) {
			continue
		}
		free := capacity.NodeFree(ni)
		if empty {
			free = capacity.NodeAllocatable(ni)
		}
		nodes = append(nodes, placement.Node{Name: ni.Node().Name, Labels: ni.Node().Labels, Free: free, Excluded: ^allowed})
	}
	shared, sharedBy := p.gangs.SharedNodes(key)
	_, unfit := placement.Choose(placement.Input{Tree: tree, Nodes: nodes, Demand: demand, Held: p.gangs.HeldNodes(key), Shared: shared, SharedBy: sharedBy,
		Spread: p.gangs.Spreads(key), Slices: p.gangs.Slices(key)})
	return unfit == nil
}

// retryElastic brings the waiting elastic members back to the active queue.
func (p *Plugin) retryElastic() {
	for _, key := range p.gangs.TakeElastic() {
		p.activate(p.gangs.Pending(key))
	}
}
