// Package topology is grove-scheduler's topology plugin: it packs a gang into the domains its
// PodGang requires — one value of a node-label key shared by the whole gang, a group config or a
// PodGroup, nested — chosen once per gang attempt as the tightest domain that still holds the
// gang, and it steers members towards the domain their gang prefers.
//
// The domain choice lives in plugins/internal/placement; this package wires it to the framework.
// Which members hold a node (and so pin their gang's domains) is recorded by the gang plugin in
// the gang's record both share, where this plugin keeps its plan too: the two are enabled
// together (grove-scheduler refuses to start a profile with Topology and without Gang).
package topology

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.TopologyPluginName

const stateKey fwk.StateKey = "grove.io/" + Name

// Plugin is the topology plugin.
type Plugin struct {
	args   pluginargs.TopologyArgs
	handle fwk.Handle
	// gangs holds each gang's record: its current placement (gangcache.Plan), reused while its
	// attempt is under way, and whether a member missed its preferred domain.
	gangs *gangcache.Shared

	// nodes is the placement index of the node list the last gang was planned over, reused
	// while the list holds the same node objects in the same order (names and labels unchanged).
	nodes struct {
		sync.Mutex
		list  []*v1.Node
		index *placement.Index
		// admits remembers, per node rules (nodes.Classes.Key), which nodes of list admit
		// them, found out as gangs asked: reading every node object again for every gang was
		// most of what a plan read of the nodes besides their room.
		admits map[string][]admission
	}
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New returns the plugin's factory: the plugin is built over the profiles' shared gang state,
// which plugins.Registry creates and hands to every Grove plugin.
func New(profiles *gangcache.Profiles) frameworkruntime.PluginFactory {
	return profiles.Factory(newPlugin)
}

// newPlugin builds the plugin from its (defaulted) args. It does not wait for the PodGang CRD.
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle, profiles *gangcache.Profiles) (fwk.Plugin, error) {
	args, ok := obj.(*pluginargs.TopologyArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type TopologyArgs, got %T", obj)
	}
	if err := pluginargs.ValidateTopologyArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	gangs, err := profiles.For(ctx, h)
	if err != nil {
		return nil, err
	}
	return &Plugin{args: *args, handle: h, gangs: gangs}, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// cycleState carries a member's domains from PreFilter to Filter and Score. It is never
// modified after PreFilter, so clones share it.
type cycleState struct {
	key       string
	uid       types.UID
	required  []placement.Choice
	preferred *placement.Choice
	shape     capacity.Resources
	// narrowed: Filter runs only on the preferred domain's nodes.
	narrowed bool
	// earlier are the nodes of the placement the gang reuses (spec.reuseReservationRef).
	earlier sets.Set[string]
	// spreadAllowed, when set, are the nodes the gang's required replica spreads leave it.
	spreadAllowed sets.Set[string]
	// slice, when set, is the domain of the member's slice (slice.go).
	slice *placement.Choice
}

func (s *cycleState) Clone() fwk.StateData { return s }

func readState(state fwk.CycleState) *cycleState {
	data, err := state.Read(stateKey)
	if err != nil {
		return nil
	}
	s, _ := data.(*cycleState)
	return s
}

// PreFilter looks up (or, at the start of a gang attempt, decides) the gang's domains and
// returns the nodes of the member's innermost required domain, so Filter runs only on them. A
// gang no domain can hold is rejected here, before any member is assumed.
//
// When the preferred domain holds the rest of the gang, Filter runs only on its nodes too: the
// scheduler stops filtering once it has found enough feasible nodes (percentageOfNodesToScore),
// so on a large cluster Score would otherwise often not see the preferred domain at all. A
// member that then fits no node there turns this off for its gang (PostFilter).
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfos []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	key, group, ok := gangcache.GangKey(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	g, found := p.gangs.Get(key)
	if !found {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	plan, tree, unfit := p.planFor(key, group, pod, g, nodeInfos)
	if tree == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if unfit != nil {
		// The gang plugin's PostFilter reads this: the whole gang has no domain.
		state.Write(gangcache.NoDomainKey, &gangcache.NoDomain{Reason: unfit.Error(), Cause: unfit.Cause()})
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, unfit.Error())
	}
	s := &cycleState{key: key, uid: g.PodGang.UID, required: plan.Required(group), shape: capacity.PodShape(pod),
		earlier: reuseNodes(p.reuseFor(g))}
	if c, ok := plan.Preferred(group); ok {
		s.preferred = &c
	}
	allowed := plan.AllowedNodes(group)
	allowed = narrowBySpread(s, plan, group, allowed, p.gangs.MissedPreference(key, s.uid))
	allowed = narrowBySlice(s, plan, group, pod, allowed)
	if preferred := plan.PreferredNodes(group); preferred != nil && !p.gangs.MissedPreference(key, s.uid) {
		if allowed != nil {
			preferred = allowed.Intersection(preferred)
		}
		if preferred.Len() > 0 {
			allowed, s.narrowed = preferred, true
		}
	}
	state.Write(stateKey, s)
	if allowed == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreFilterResult{NodeNames: allowed}, nil
}

// planFor returns the gang's placement. It is decided when no member is assumed — the start of
// an attempt — and reused by the attempt's later members, so a gang's domain is chosen once per
// attempt. tree is nil for gangs without pack constraints.
func (p *Plugin) planFor(key, group string, pod *v1.Pod, g gangcache.Gang, nodeInfos []fwk.NodeInfo) (*placement.Plan, *placement.Tree, *placement.Unfit) {
	gp := p.gangs.Plan(key)
	if gp.PodGang == g.PodGang && gp.Plan != nil && g.Quorum.Assumed() > 0 {
		return gp.Plan, gp.Tree, nil
	}
	reuse := p.reuseFor(g)
	var tree *placement.Tree
	if gp.PodGang == g.PodGang && gp.Tree != nil {
		tree = gp.Tree
	} else {
		tree = treeFor(g, reuse)
	}
	spreads := p.gangs.Spreads(key)
	slices := p.gangs.Slices(key)
	if !tree.Constrained() && len(spreads) == 0 && len(slices) == 0 {
		// Remember the tree so that unconstrained gangs cost one record lookup per member.
		if gp.Tree != tree {
			p.gangs.SetPlan(key, gangcache.Plan{PodGang: g.PodGang, Tree: tree})
		}
		return nil, nil, nil
	}

	count := g.Quorum.Remaining()
	if count[group] == 0 {
		// The gang's quorum has nodes: place this extra member alone, next to its gang.
		count[group] = 1
	}
	demands, classes := p.gangs.Demands(key, pod, g.Quorum.Names(), count)
	demand := byGroup(demands)
	// The other PodGangs of its group (a PodCliqueSet replica) pin the domain they share; while
	// none of them holds a node, this gang chooses that domain for all of them.
	shared, sharedBy := p.gangs.SharedNodes(key)
	var companions []placement.Companion
	if len(shared) == 0 && tree.Root.ID == placement.SharedSetID && tree.Root.Required != "" {
		companions = p.companions(key, pod, classes)
	}
	// The DRA plugin keeps the choice to domains that offer the gang's devices and pins it to
	// where devices its members share already are.
	devices := p.gangs.DeviceAdvice(key, g, pod, nodeInfos)
	// Nodes reserved for a starving gang that outranks this one are not for it.
	reservation, prio, now := p.gangs.Reservation(), corev1helpers.PodPriority(pod), time.Now()
	candidates := make([]placement.Node, len(nodeInfos))
	p.nodes.Lock()
	defer p.nodes.Unlock()
	sameNodes := len(p.nodes.list) == len(nodeInfos)
	var admits [][]admission
	if sameNodes {
		admits = p.admissions(classes)
	}
	for i, ni := range nodeInfos {
		node := ni.Node()
		var allowed capacity.Mask
		if sameNodes = sameNodes && p.nodes.list[i] == node; sameNodes {
			// Read from the index, in order, rather than from each node object.
			candidates[i].Name, candidates[i].Labels = p.nodes.index.Node(i)
			allowed = admitted(admits, classes, i, node)
		} else {
			candidates[i].Name, candidates[i].Labels = node.Name, node.Labels
			allowed = classes.Allowed(node)
		}
		// The name as read above: the node object itself is not read again (on thousands of
		// nodes, mostly out of the CPU's caches).
		if name := candidates[i].Name; devices.Usable != nil && !devices.Usable[name] || reservation.Excludes(key, prio, name, now) {
			allowed = 0
		}
		if allowed != 0 {
			candidates[i].Free = capacity.NodeFree(ni)
		}
		candidates[i].Excluded = ^allowed
	}
	held := p.gangs.HeldNodes(key)
	if held == nil {
		held = map[string][]string{}
	}
	for group, anchors := range devices.Anchors {
		held[group] = append(held[group], anchors...)
	}
	var ruledOut map[placement.Choice][]string
	for _, r := range p.gangs.RuledOutDomains(key, g.PodGang.UID) {
		if ruledOut == nil {
			ruledOut = map[placement.Choice][]string{}
		}
		ruledOut[r.Choice] = r.By
	}
	if !sameNodes {
		p.nodes.list = make([]*v1.Node, len(nodeInfos))
		for i, ni := range nodeInfos {
			p.nodes.list[i] = ni.Node()
		}
		p.nodes.index = placement.NewIndex(candidates)
		p.nodes.admits = nil
	}
	plan, unfit := placement.Choose(placement.Input{Tree: tree, Nodes: candidates, Demand: demand, Held: held, Shared: shared,
		SharedBy: sharedBy, Group: companions, RuledOut: ruledOut, Reuse: reuse, Spread: spreads, Slices: slices, Index: p.nodes.index})
	p.gangs.SetPlan(key, gangcache.Plan{PodGang: g.PodGang, Tree: tree, Plan: plan})
	return plan, tree, unfit
}

// companions are the other PodGangs of gang key's group as the shared domain choice counts
// them (at quorum and at full size), base first; their classes join the gang's, so that the
// nodes' masks, computed afterwards, tell all of them apart.
func (p *Plugin) companions(key string, pod *v1.Pod, classes *nodes.Classes) []placement.Companion {
	var out []placement.Companion
	for _, gg := range p.gangs.GroupGangs(key) {
		names := make([]string, len(gg.PodGang.Spec.PodGroups))
		for i, pg := range gg.PodGang.Spec.PodGroups {
			names[i] = pg.Name
		}
		out = append(out, placement.Companion{Tree: placement.NewTree(&gg.PodGang.Spec),
			Quorum: byGroup(p.gangs.DemandsWith(classes, gg.Key, pod, names, gg.Quorum)),
			Full:   byGroup(p.gangs.DemandsWith(classes, gg.Key, pod, names, gg.Full))})
	}
	return out
}

func byGroup(demands capacity.Demands) map[string]capacity.Demand {
	out := make(map[string]capacity.Demand, len(demands))
	for _, d := range demands {
		out[d.Group] = d
	}
	return out
}

// PostFilter: a member fit no node of its gang's domain.
//
// Narrowed to its preferred domain, the gang's preference is not worth a failed attempt again:
// its next attempts search every node.
//
// Otherwise, when a filter plugin other than the resource fit rejected every node of the
// member's innermost required domain, counted capacity chose a domain the real filters refuse
// (anti-affinity, ports, volumes...): the domain is ruled out for the gang until the room
// changes, and the gang is tried again at once in the next candidate domain (each domain at
// most once per room change, so this cannot loop).
func (p *Plugin) PostFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s := readState(state)
	switch {
	case s == nil:
	case s.narrowed:
		p.gangs.MissPreference(s.key, s.uid)
	case len(s.required) > 0:
		if d, ok := p.ruledOut(s, pod, statuses); ok && p.gangs.RuleOut(s.key, s.uid, d) {
			if pending := p.gangs.Pending(s.key); len(pending) > 0 {
				m := make(map[string]*v1.Pod, len(pending))
				for _, pp := range pending {
					m[pp.Namespace+"/"+pp.Name] = pp
				}
				p.handle.Activate(klog.Background(), m)
			}
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s %q is ruled out for the gang by %s; the next domain is tried",
				placement.DomainNoun(d.Key), d.Value, strings.Join(d.By, ", ")))
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// countedAlready are the plugins whose rejections the domain choice already counted, not a
// reason to rule a domain out: the in-tree resource fit (capacity), and Grove's own plugins
// (this one's domains, the gang plugin's reservations, the DRA plugin's devices, which it
// advises the choice on).
var countedAlready = map[string]bool{"": true, "NodeResourcesFit": true, Name: true,
	pluginargs.GangPluginName: true, pluginargs.DRAPluginName: true, pluginargs.GangPreemptionPluginName: true}

// ruledOut returns the member's innermost required domain when filter plugins other than the
// resource fit rejected every one of its nodes.
func (p *Plugin) ruledOut(s *cycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (gangcache.RuledOut, bool) {
	_, group, _ := gangcache.GangKey(pod)
	gp := p.gangs.Plan(s.key)
	if gp.Plan == nil {
		return gangcache.RuledOut{}, false
	}
	allowed := gp.Plan.AllowedNodes(group)
	if allowed.Len() == 0 {
		return gangcache.RuledOut{}, false
	}
	by := sets.New[string]()
	for name := range allowed {
		st := statuses.Get(name)
		if st == nil || st.IsSuccess() {
			return gangcache.RuledOut{}, false
		}
		if plugin := st.Plugin(); !countedAlready[plugin] {
			by.Insert(plugin)
		}
	}
	if by.Len() == 0 {
		return gangcache.RuledOut{}, false
	}
	return gangcache.RuledOut{Choice: s.required[len(s.required)-1], By: sets.List(by)}, true
}

// PreFilterExtensions is not needed: domains do not depend on single pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter keeps the member inside its gang's required domains. PreFilter already narrowed the
// nodes; this also guards nodes the scheduler reaches by other means (nominated or batch-hinted
// nodes).
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := readState(state)
	if s == nil {
		return nil
	}
	if s.spreadAllowed != nil && !s.spreadAllowed.Has(nodeInfo.Node().Name) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node is in a domain another replica of the gang's spread group uses")
	}
	labels := nodeInfo.Node().Labels
	for _, c := range s.required {
		if labels[c.Key] != c.Value {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node is outside the gang's %s %q", placement.DomainNoun(c.Key), c.Value))
		}
	}
	if c := s.slice; c != nil && labels[c.Key] != c.Value {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node is outside the %s %q of the pod's slice", placement.DomainNoun(c.Key), c.Value))
	}
	return nil
}

// PreScore skips scoring for members without a preferred domain.
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if s := readState(state); s == nil || s.preferred == nil && s.earlier == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score favours nodes in the domain the gang prefers (where its members already are, or the
// tightest that holds it), then packs: fuller nodes score higher.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(state)
	if s == nil || s.preferred == nil && s.earlier == nil {
		return 0, nil
	}
	weight := int64(p.args.PreferredDomainWeight)
	var inDomain int64
	if s.preferred != nil && nodeInfo.Node().Labels[s.preferred.Key] == s.preferred.Value {
		inDomain = fwk.MaxScore
	}
	pack := packScore(nodeInfo, s.shape)
	if s.earlier.Has(nodeInfo.Node().Name) {
		// A node of the placement the gang reuses beats any other of its domain.
		pack = fwk.MaxScore
	}
	return (weight*inDomain + (fwk.MaxScore-weight)*pack) / fwk.MaxScore, nil
}

// packScore is how full the node would be with the pod, 0-100, averaged over CPU and memory.
func packScore(nodeInfo fwk.NodeInfo, shape capacity.Resources) int64 {
	alloc, used := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()
	fraction := func(used, add, total int64) int64 {
		if total <= 0 {
			return 0
		}
		return min(fwk.MaxScore, (used+add)*fwk.MaxScore/total)
	}
	return (fraction(used.GetMilliCPU(), shape.MilliCPU, alloc.GetMilliCPU()) + fraction(used.GetMemory(), shape.Memory, alloc.GetMemory())) / 2
}

// ScoreExtensions is not needed: scores are already 0-100.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod lets the scheduler batch pods: domains depend only on the gang and PodGroup.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return gangcache.SignFragments(pod), nil
}
