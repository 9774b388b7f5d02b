// Package preemption is grove-scheduler's gang-aware preemption: the PostFilter that replaces
// kube-scheduler's DefaultPreemption in Grove's profile.
//
// A PodGang is evicted whole or not at all: taking one member out of a placed gang leaves it
// below its quorum, holding its other nodes for nothing until gang termination tears it down.
// A higher-priority gang that does not fit evicts the fewest, lowest-priority whole gangs (and
// pods outside gangs) whose room makes its whole remaining quorum fit inside the domain its
// pack constraints require. A pod outside gangs keeps kube-scheduler's own preemption against
// other pods outside gangs; only when that does not help may it evict whole gangs. Units of
// equal or higher priority are never evicted; preemptionPolicy: Never and PodDisruptionBudgets
// are honoured as DefaultPreemption honours them.
package preemption

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	kpreemption "k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/order"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.GangPreemptionPluginName

const (
	// reservationSlack is how long the room freed for a gang stays reserved for it beyond its
	// victims' termination grace period.
	reservationSlack = 30 * time.Second
)

// Plugin is the gang-aware preemption plugin.
type Plugin struct {
	ctx    context.Context
	handle fwk.Handle
	gangs  *gangcache.Shared
	// plain is kube-scheduler's DefaultPreemption, for pods outside gangs against pods outside
	// gangs (gang members are made ineligible as its victims).
	plain    *defaultpreemption.DefaultPreemption
	pods     corelisters.PodLister
	pdbs     policylisters.PodDisruptionBudgetLister
	inflight *inflight
	// api is how victims are marked and deleted.
	api podAPI
	// evict deletes the victims; a field so tests of the decision need no API server.
	evict func(ctx context.Context, preemptor preemptorInfo, victims []Unit, unitPods [][]*v1.Pod)
}

var (
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// New returns the plugin's factory: the plugin is built over the profiles' shared gang state,
// which plugins.Registry creates and hands to every Grove plugin.
func New(profiles *gangcache.Profiles) frameworkruntime.PluginFactory {
	return profiles.Factory(newPlugin)
}

// newPlugin builds the plugin; it takes no args.
func newPlugin(ctx context.Context, _ runtime.Object, h fwk.Handle, profiles *gangcache.Profiles) (fwk.Plugin, error) {
	gangs, err := profiles.For(ctx, h)
	if err != nil {
		return nil, err
	}
	// The same defaults kube-scheduler gives DefaultPreemptionArgs.
	plain, err := defaultpreemption.New(ctx, &config.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100},
		h, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	plain.IsEligiblePod = func(_ fwk.NodeInfo, victim kpreemption.Victim, _ *v1.Pod) bool {
		for _, pi := range victim.Pods() {
			if _, _, member := gangcache.GangKey(pi.GetPod()); member {
				return false
			}
		}
		return true
	}
	p := &Plugin{
		ctx: ctx, handle: h, gangs: gangs, plain: plain,
		pods:     h.SharedInformerFactory().Core().V1().Pods().Lister(),
		pdbs:     h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister(),
		inflight: newInflight(),
	}
	p.api = handleAPI{h: h}
	p.evict = p.evictUnits
	return p, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// preemptorInfo describes who preempts: a gang or a pod outside gangs.
type preemptorInfo struct {
	// key is the gang's key, or podKey(pod) for a pod outside gangs.
	key string
	// what names it in messages ("PodGang ns/name" or "pod ns/name").
	what     string
	pod      *v1.Pod
	priority int32
	// gang is the preemptor's PodGang reference; nil for a pod outside gangs.
	gang *v1.ObjectReference
}

func podKey(pod *v1.Pod) string { return "pod:" + pod.Namespace + "/" + pod.Name }

func preemptorKey(pod *v1.Pod) string {
	if key, _, member := gangcache.GangKey(pod); member {
		return key
	}
	return podKey(pod)
}

// PostFilter runs once a pod fits no node.
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible due to preemptionPolicy=Never")
	}
	if remaining, what := p.inflight.remaining(preemptorKey(pod), p.exists, time.Now()); remaining > 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption: waiting for %d preempted pods of %s to terminate", remaining, what))
	}
	key, _, member := gangcache.GangKey(pod)
	if !member {
		return p.preemptForPod(ctx, state, pod, statuses)
	}
	return p.preemptForGang(ctx, pod, key)
}

// preemptForGang evicts whole lower-priority gangs so that the gang's remaining quorum fits.
func (p *Plugin) preemptForGang(ctx context.Context, pod *v1.Pod, key string) (*fwk.PostFilterResult, *fwk.Status) {
	g, found := p.gangs.Get(key)
	if !found {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if g.Quorum.Missing() != "" || g.Quorum.Assumed() > 0 {
		// Not all of the quorum is here, or an attempt holds nodes: nothing to make room for yet.
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	remaining := g.Quorum.Remaining()
	var total int32
	for _, n := range remaining {
		total += n
	}
	if total == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: a member beyond its gang's quorum does not preempt")
	}
	nodeInfos, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	demands, classes := p.gangs.Demands(key, pod, g.Quorum.Names(), remaining)
	preemptor := p.gangPreemptor(key, pod, g)
	prob := Problem{Demand: demands, Tree: placement.NewTree(&g.PodGang.Spec), Held: p.gangs.HeldNodes(key),
		DomainKey: g.PodGang.Spec.TopologyConstraint.Required()}
	if prob.DomainKey == "" {
		// The domain the PodGangs of its PodCliqueSet replica share is as required as its own.
		prob.DomainKey = g.PodGang.Spec.SharedTopologyConstraint.Required()
	}
	prob.Shared, prob.SharedBy = p.gangs.SharedNodes(key)
	// Room only counts where each slice finds a domain of its own.
	prob.Slices = p.gangs.Slices(key)
	// Devices its members' claims already hold pin the domains of the PodGroups using them, as
	// they do for the topology plugin: victims elsewhere would be evicted for nothing.
	for group, anchors := range p.gangs.DeviceAdvice(key, g, pod, nodeInfos).Anchors {
		if prob.Held == nil {
			prob.Held = map[string][]string{}
		}
		prob.Held[group] = append(prob.Held[group], anchors...)
	}
	prob.Nodes = problemNodes(nodeInfos, classes.Allowed)
	units, unitPods, freeing := p.victimUnits(nodeInfos, preemptor)
	prob.Units = units
	release(prob.Nodes, freeing)
	// Room in a domain another replica of its spread group uses is no room for it (for a
	// scaling-group replica's PodGroups only, under a scoped spread).
	prob.Spread = placement.BlockRequiredSpread(prob.Nodes, p.gangs.Spreads(key))
	return p.decide(ctx, nil, preemptor, prob, unitPods, false)
}

// gangPreemptor describes gang key preempting. It preempts with its priority in the order of
// claims on room — the lowest of its quorum's members — not the priority of the member that
// happens to be attempted: one small high-priority pod must not let three big low-priority
// ones evict a gang that outranks them.
func (p *Plugin) gangPreemptor(key string, pod *v1.Pod, g gangcache.Gang) preemptorInfo {
	e, _ := p.gangs.Entry(key, order.Base, corev1helpers.PodPriority(pod))
	return preemptorInfo{key: key, what: "PodGang " + key, pod: pod, priority: e.Priority,
		gang: gangRef(g.PodGang.Namespace, g.PodGang.Name, g.PodGang.UID)}
}

// preemptForPod: DefaultPreemption against pods outside gangs first; if that cannot help,
// whole lower-priority gangs (and pods outside gangs) may make room on one node.
func (p *Plugin) preemptForPod(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	var nominatedStatus *fwk.Status
	if pod.Status.NominatedNodeName != "" {
		nominatedStatus = statuses.Get(pod.Status.NominatedNodeName)
	}
	if eligible, why := p.plain.PodEligibleToPreemptOthers(ctx, pod, nominatedStatus); !eligible {
		schedmetrics.Preemption(schedmetrics.PreemptorPod, schedmetrics.PreemptionRefused)
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: "+why)
	}
	result, status := p.plain.PostFilter(ctx, state, pod, statuses)
	if status.IsSuccess() || status.Code() == fwk.Error {
		return result, status
	}
	nodeInfos, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	rules := nodes.RulesOf(pod)
	preemptor := preemptorInfo{key: podKey(pod), what: "pod " + pod.Namespace + "/" + pod.Name, pod: pod, priority: corev1helpers.PodPriority(pod)}
	prob := Problem{Demand: capacity.Demands{{Shape: capacity.PodShape(pod), Count: 1}}, PerNode: true,
		Nodes: problemNodes(nodeInfos, func(n *v1.Node) capacity.Mask {
			if rules.Allows(n) {
				return capacity.AnyClass
			}
			return 0
		})}
	units, unitPods, freeing := p.victimUnits(nodeInfos, preemptor)
	prob.Units = units
	release(prob.Nodes, freeing)
	// Only worth it if a gang is among what may go: DefaultPreemption already judged the rest.
	hasGang := false
	for _, u := range units {
		hasGang = hasGang || u.Gang != ""
	}
	if !hasGang {
		return result, status
	}
	return p.decide(ctx, state, preemptor, prob, unitPods, true)
}

// decide selects the victims and evicts them. A pod outside gangs is nominated to the node
// that was freed for it; a gang gets the freed nodes reserved against gangs that do not outrank
// it, so the room adds up until its whole quorum fits.
func (p *Plugin) decide(ctx context.Context, state fwk.CycleState, preemptor preemptorInfo, prob Problem, unitPods [][]*v1.Pod, nominate bool) (*fwk.PostFilterResult, *fwk.Status) {
	who := schedmetrics.PreemptorPod
	if preemptor.gang != nil {
		who = schedmetrics.PreemptorGang
	}
	choice, outcome := Select(prob)
	switch outcome {
	case FitsAlready:
		schedmetrics.Preemption(who, schedmetrics.PreemptionNotNeeded)
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not needed: the room is there, or is being freed by terminating pods")
	case NotEnough:
		schedmetrics.Preemption(who, schedmetrics.PreemptionNotEnough)
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"preemption: evicting every lower-priority gang and pod (%d) would not make %s fit", len(prob.Units), preemptor.what))
	}
	if nominate {
		if st := p.checkNode(ctx, state, preemptor.pod, choice.Domain, choice.Victims, unitPods); !st.IsSuccess() {
			schedmetrics.Preemption(who, schedmetrics.PreemptionRefused)
			return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: "+st.Message())
		}
	}
	schedmetrics.Preemption(who, schedmetrics.PreemptionEvicting)
	victims := make([]Unit, len(choice.Victims))
	pods := make([][]*v1.Pod, len(choice.Victims))
	var names []string
	freed := sets.New[string]()
	var grace int64
	for i, u := range choice.Victims {
		victims[i], pods[i] = prob.Units[u], unitPods[u]
		names = append(names, prob.Units[u].Key)
		for _, vp := range prob.Units[u].Pods {
			freed.Insert(vp.Node)
		}
		for _, pod := range unitPods[u] {
			if pod.Spec.TerminationGracePeriodSeconds != nil {
				grace = max(grace, *pod.Spec.TerminationGracePeriodSeconds)
			}
		}
	}
	now := time.Now()
	expires := now.Add(time.Duration(grace)*time.Second + reservationSlack)
	p.inflight.start(preemptor.key, pods, strings.Join(names, ", "), expires)
	r := &gangcache.Reservation{Key: preemptor.key, Priority: preemptor.priority, Since: now, Expires: expires, Nodes: freed}
	p.gangs.Reserve(r, now)
	klog.FromContext(ctx).V(2).Info("Preempting whole workloads", "preemptor", preemptor.what, "victims", names, "domain", choice.Domain)
	go p.evict(p.ctx, preemptor, victims, pods)
	msg := fmt.Sprintf("preemption: evicting %s to make room for %s", strings.Join(names, ", "), preemptor.what)
	if nominate {
		return framework.NewPostFilterResultWithNominatedNode(choice.Domain), fwk.NewStatus(fwk.Success, msg)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, msg)
}

// checkNode runs the filter plugins for a pod outside gangs on its node without the victims,
// as DefaultPreemption does: the node must then take it, whatever else the pod asks for.
func (p *Plugin) checkNode(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string, victims []int, unitPods [][]*v1.Pod) *fwk.Status {
	ni, err := p.handle.SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil {
		return fwk.AsStatus(err)
	}
	ni = ni.Snapshot()
	logger := klog.FromContext(ctx)
	for _, u := range victims {
		for _, vp := range unitPods[u] {
			if vp.Spec.NodeName == node {
				if err := ni.RemovePod(logger, vp); err != nil {
					return fwk.AsStatus(err)
				}
			}
		}
	}
	return p.handle.RunFilterPluginsWithNominatedPods(ctx, state.Clone(), pod, ni)
}

// problemNodes turns the snapshot's nodes into planner nodes; allowed says which of the
// preemptor's classes may use each.
func problemNodes(nodeInfos []fwk.NodeInfo, allowed func(*v1.Node) capacity.Mask) []placement.Node {
	out := make([]placement.Node, len(nodeInfos))
	for i, ni := range nodeInfos {
		node := ni.Node()
		mask := allowed(node)
		out[i] = placement.Node{Name: node.Name, Labels: node.Labels, Excluded: ^mask}
		if mask != 0 {
			out[i].Free = capacity.NodeFree(ni)
		}
	}
	return out
}

// victimUnits collects the workloads the preemptor may evict, each whole: every PodGang with a
// member on a node, and every pod outside gangs, whose priority is below the preemptor's. A
// gang any of whose pods is terminating, waiting at a Permit barrier or of too high a priority
// is not a candidate. unitPods holds every existing pod of each unit (what eviction deletes).
func (p *Plugin) victimUnits(nodeInfos []fwk.NodeInfo, preemptor preemptorInfo) ([]Unit, [][]*v1.Pod, []VictimPod) {
	type acc struct {
		unit    Unit
		placed  []*v1.Pod
		blocked bool
	}
	byKey := map[string]*acc{}
	var order []string
	var freeing []VictimPod
	for _, ni := range nodeInfos {
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if pod.DeletionTimestamp != nil {
				// Already on its way out (often a victim of an earlier preemption): its room is
				// counted as free, so that nothing more is evicted in its place.
				freeing = append(freeing, VictimPod{Node: ni.Node().Name, Shape: capacity.PodShape(pod)})
			}
			key := podKey(pod)
			what := "pod " + pod.Namespace + "/" + pod.Name
			if gk, _, member := gangcache.GangKey(pod); member {
				key, what = gk, "PodGang "+gk
			}
			if key == preemptor.key {
				continue
			}
			a := byKey[key]
			if a == nil {
				a = &acc{unit: Unit{Key: what, Priority: corev1helpers.PodPriority(pod)}}
				if what != "pod "+pod.Namespace+"/"+pod.Name {
					a.unit.Gang = key
				}
				byKey[key] = a
				order = append(order, key)
			}
			prio := corev1helpers.PodPriority(pod)
			a.unit.Priority = max(a.unit.Priority, prio)
			if prio >= preemptor.priority || pod.DeletionTimestamp != nil || p.handle.GetWaitingPod(pod.UID) != nil {
				a.blocked = true
			}
			if st := pod.Status.StartTime; st != nil && st.After(a.unit.Start) {
				a.unit.Start = st.Time
			}
			a.unit.Pods = append(a.unit.Pods, VictimPod{Node: ni.Node().Name, Shape: capacity.PodShape(pod)})
			a.placed = append(a.placed, pod)
		}
	}
	var pdbs []*policy.PodDisruptionBudget
	if p.pdbs != nil {
		pdbs, _ = p.pdbs.List(labels.Everything())
	}
	budget := newBudgets(pdbs)
	var units []Unit
	var unitPods [][]*v1.Pod
	for _, key := range order {
		a := byKey[key]
		if a.blocked {
			continue
		}
		pods := a.placed
		if a.unit.Gang != "" {
			pods = p.gangPods(key, a.placed)
			if pods == nil {
				continue
			}
		}
		a.unit.ViolatesPDB = budget.violated(pods)
		units = append(units, a.unit)
		unitPods = append(unitPods, pods)
	}
	return units, unitPods, freeing
}

// release counts the room of terminating pods as free.
func release(nodes []placement.Node, freeing []VictimPod) {
	byName := make(map[string]int, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = i
	}
	for _, vp := range freeing {
		if i, ok := byName[vp.Node]; ok && nodes[i].Excluded != capacity.AnyClass {
			nodes[i].Free.Take(vp.Shape, -1)
		}
	}
}

// gangPods is every existing pod of gang key (pending ones too: the gang restarts whole); nil
// when one of them rules the gang out as a victim.
func (p *Plugin) gangPods(key string, placed []*v1.Pod) []*v1.Pod {
	ns, name, _ := strings.Cut(key, "/")
	sel := labels.SelectorFromSet(labels.Set{common.LabelPodGang: name})
	all, err := p.pods.Pods(ns).List(sel)
	if err != nil {
		return placed
	}
	seen := map[types.UID]bool{}
	out := make([]*v1.Pod, 0, len(all))
	for _, pod := range placed {
		seen[pod.UID] = true
		out = append(out, pod)
	}
	for _, pod := range all {
		if seen[pod.UID] {
			continue
		}
		if pod.Spec.NodeName != "" && pod.DeletionTimestamp != nil {
			return nil
		}
		out = append(out, pod)
	}
	return out
}

// exists reports whether a victim pod is still there (terminating or not).
func (p *Plugin) exists(ref types.NamespacedName, uid types.UID) bool {
	pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
	return err == nil && pod.UID == uid
}

// PreEnqueue keeps a preemptor out of the active queue while the pods it preempted terminate:
// attempting it before they are gone would only find the same nodes full. Pods outside gangs
// also pass DefaultPreemption's own gate.
func (p *Plugin) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if remaining, what := p.inflight.remaining(preemptorKey(pod), p.exists, time.Now()); remaining > 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for %d preempted pods of %s to terminate", remaining, what))
	}
	if _, _, member := gangcache.GangKey(pod); !member {
		return p.plain.PreEnqueue(ctx, pod)
	}
	return nil
}

// EventsToRegister: a preemptor held by PreEnqueue comes back when its last victim is gone.
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.isSchedulableAfterVictimDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Delete}, QueueingHintFn: p.isSchedulableAfterVictimDeleted},
	}, nil
}

// isSchedulableAfterVictimDeleted requeues a preemptor once none of its victims is left; other
// pods are left to the plugins that rejected them (DefaultPreemption does the same).
func (p *Plugin) isSchedulableAfterVictimDeleted(_ klog.Logger, pod *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	key := preemptorKey(pod)
	if !p.inflight.known(key) {
		return fwk.QueueSkip, nil
	}
	if deleted, ok := oldObj.(*v1.Pod); ok {
		p.inflight.gone(key, deleted.UID)
	}
	if remaining, _ := p.inflight.remaining(key, p.exists, time.Now()); remaining > 0 {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

func gangRef(namespace, name string, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Namespace: namespace, Name: name, UID: uid}
}

// budgets counts what PodDisruptionBudgets still allow as units are considered in turn, as
// DefaultPreemption does: a unit any of whose pods would break a budget violates it.
type budgets struct {
	pdbs    []*policy.PodDisruptionBudget
	allowed []int32
}

func newBudgets(pdbs []*policy.PodDisruptionBudget) *budgets {
	b := &budgets{pdbs: pdbs, allowed: make([]int32, len(pdbs))}
	for i, pdb := range pdbs {
		b.allowed[i] = pdb.Status.DisruptionsAllowed
	}
	return b
}

func (b *budgets) violated(pods []*v1.Pod) bool {
	violates := false
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || len(pod.Labels) == 0 {
			continue
		}
		for i, pdb := range b.pdbs {
			if pdb.Namespace != pod.Namespace {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
				continue
			}
			b.allowed[i]--
			if b.allowed[i] < 0 {
				violates = true
			}
		}
	}
	return violates
}
