package gang

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/memberplan"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
)

// planRunner is the part of the framework a member plan uses: the cycle's snapshot, the
// profile's Filter plugins and their PreFilter extensions, and pod signatures. The framework
// handle is one; nil turns planning off.
type planRunner interface {
	SnapshotSharedLister() fwk.SharedLister
	RunFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status
	RunPreFilterExtensionAddPod(ctx context.Context, state fwk.CycleState, podToSchedule *v1.Pod, podInfoToAdd fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status
	SignPod(ctx context.Context, pod *v1.Pod) fwk.PodSignature
}

// plannedNode returns the node planned for a quorum member of attempt epoch, or "" when it has
// none or the node no longer has room for it (another pod took it since the plan was made):
// the member then goes the ordinary way, over its gang's domain. A member the preemption
// plugin nominated a node for keeps that node.
func (p *Plugin) plannedNode(key string, epoch uint64, pod *v1.Pod) string {
	if p.runner == nil || pod.Status.NominatedNodeName != "" {
		return ""
	}
	node, ok := p.plans.Node(key, epoch, pod.UID)
	if !ok {
		return ""
	}
	ni, err := p.runner.SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil || capacity.NodeFree(ni).FitCount(capacity.PodShape(pod)) < 1 {
		schedmetrics.MemberPlan(schedmetrics.PlanStale)
		return ""
	}
	schedmetrics.MemberPlan(schedmetrics.PlanHandedOut)
	return node
}

// planGroup plans where the other members of pod's PodGroup in this attempt go: pod is the
// first of them to get a node (nodeName) and its cycle state holds every PreFilter plugin's
// view of it, which the members alike to it (same scheduling signature) share — the reasoning
// of the scheduler's own batching. Each member is checked by the profile's Filter plugins on a
// copy of its node that holds pod and the members planned before it.
func (p *Plugin) planGroup(ctx context.Context, state fwk.CycleState, pod *v1.Pod, key, group string, epoch uint64, nodeName string) {
	if p.runner == nil || p.plans.Planned(key, epoch, group) {
		return
	}
	g, ok := p.gangs.Get(key)
	if !ok {
		return
	}
	remaining := int(g.Quorum.Remaining()[group])
	if remaining <= 0 {
		return
	}
	// The framework hands Reserve the assumed pod, its nodeName set: the members still pending
	// are compared with it as it was before.
	unassumed := *pod
	unassumed.Spec.NodeName = ""
	indexUnselected := p.podIndexUnselected()
	sig := p.runner.SignPod(ctx, withoutIndex(&unassumed, indexUnselected))
	if sig == nil {
		// Signatures are off for the profile: nothing tells which members are alike.
		return
	}
	var members []*v1.Pod
	for _, m := range p.gangs.Pending(key) {
		if m.UID == pod.UID || m.Labels[common.LabelPodClique] != group || m.Status.NominatedNodeName != "" {
			continue
		}
		// Each member is signed once per attempt: when the members are not alike, every later
		// member's Reserve comes here again, and signing them all each time made a gang of n
		// cost n²/2 signatures.
		msig := p.plans.Signature(key, epoch, m.UID, func() []byte { return p.runner.SignPod(ctx, withoutIndex(m, indexUnselected)) })
		if bytes.Equal(msig, sig) {
			members = append(members, m)
		}
	}
	if len(members) == 0 {
		return
	}
	// The queue takes one gang's members by name: plan them in that order.
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	if len(members) > remaining {
		members = members[:remaining]
	}
	all, err := p.runner.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return
	}
	uids := make([]types.UID, len(members))
	for i, m := range members {
		uids[i] = m.UID
	}
	nodes := p.candidates(key, group, all)
	// Most room first: the spreading of the default resource scoring; the members land on the
	// nodes this ranking puts first, as batched pods do on one ranking of the nodes. Only the
	// head of the ranking is built at first: on thousands of nodes, computing and sorting the
	// room of each for a handful of members was most of a gang's planning.
	planned := p.assignMembers(ctx, state, pod, nodeName, members, uids, nodes, headFor(len(members)))
	if planned == nil {
		planned = p.assignMembers(ctx, state, pod, nodeName, members, uids, nodes, len(nodes))
	}
	p.plans.Add(key, epoch, group, planned)
	klog.FromContext(ctx).V(4).Info("Planned a gang's members", "podGang", key, "podGroup", group, "members", len(members), "planned", len(planned))
}

// headFor is how many of the roomiest candidate nodes a plan for n members is first made
// over. Assign puts one member per node on its first pass, so a head of n nodes would do when
// every one of them passes the filters; the slack absorbs nodes the filters refuse.
func headFor(n int) int { return 2*n + 8 }

// assignMembers plans members over the head roomiest of nodes. It returns nil when a head
// shorter than nodes did not hold each member on a node of its own: Assign's first pass over
// all the nodes could then have gone on past the head, and only the whole ranking gives its
// answer.
func (p *Plugin) assignMembers(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string,
	members []*v1.Pod, uids []types.UID, nodes []fwk.NodeInfo, head int) map[types.UID]string {
	ranked := roomiest(nodes, head)
	sim := &filterSim{ctx: ctx, runner: p.runner, state: state.Clone(), rep: pod, members: members, nodes: ranked}
	cands := make([]memberplan.Node, len(ranked))
	for i, ni := range ranked {
		cands[i] = memberplan.Node{Name: ni.Node().Name, Free: capacity.NodeFree(ni)}
		if cands[i].Name == nodeName {
			// The snapshot predates pod's own assumption.
			cands[i].Free.Take(capacity.PodShape(pod), 1)
			sim.copyOf(i, pod)
		}
	}
	planned := memberplan.Assign(uids, capacity.PodShape(pod), cands, sim)
	if len(ranked) < len(nodes) && (len(planned) < len(members) || len(sets.New(slices.Collect(maps.Values(planned))...)) < len(planned)) {
		return nil
	}
	return planned
}

// roomiest returns the head nodes with the most free CPU, then memory, in that order, ties in
// the snapshot's order: the head of a stable sort of nodes by room, without computing the full
// room of every node or sorting them all.
func roomiest(nodes []fwk.NodeInfo, head int) []fwk.NodeInfo {
	type ranked struct {
		cpu, mem int64
		ni       fwk.NodeInfo
	}
	if head > len(nodes) {
		head = len(nodes)
	}
	// before reports whether a ranks ahead of b; on a tie the one met first stays ahead.
	before := func(a, b ranked) bool { return a.cpu > b.cpu || a.cpu == b.cpu && a.mem > b.mem }
	top := make([]ranked, 0, head+1)
	for _, ni := range nodes {
		alloc, used := ni.GetAllocatable(), ni.GetRequested()
		r := ranked{cpu: alloc.GetMilliCPU() - used.GetMilliCPU(), mem: alloc.GetMemory() - used.GetMemory(), ni: ni}
		if len(top) == head && !before(r, top[head-1]) {
			continue
		}
		// After every node it does not rank ahead of: stable.
		at := sort.Search(len(top), func(i int) bool { return before(r, top[i]) })
		top = slices.Insert(top, at, r)
		if len(top) > head {
			top = top[:head]
		}
	}
	out := make([]fwk.NodeInfo, len(top))
	for i, r := range top {
		out[i] = r.ni
	}
	return out
}

// withoutIndex returns pod as signed for comparison with the gang's other members: without its
// pod-index label when indexUnselected. The index is the one label that differs between the
// pods of a PodClique, and the signature of InterPodAffinity includes every label (an existing
// pod's affinity terms could select on any), so without this no two pods the operator created
// would ever be alike. Every member drops it alike, so a member's signature does not depend on
// which member it is compared with and is computed once per attempt.
func withoutIndex(pod *v1.Pod, indexUnselected bool) *v1.Pod {
	if _, ok := pod.Labels[common.LabelPodCliquePodIndex]; !indexUnselected || !ok {
		return pod
	}
	c := *pod
	c.Labels = maps.Clone(pod.Labels)
	delete(c.Labels, common.LabelPodCliquePodIndex)
	return &c
}

// podIndexUnselected reports whether no pod with affinity terms in the snapshot selects on the
// pod-index label: then the index makes no difference to any filter or score.
func (p *Plugin) podIndexUnselected() bool {
	withAffinity, err := p.runner.SnapshotSharedLister().NodeInfos().HavePodsWithAffinityList()
	if err != nil {
		return false
	}
	for _, ni := range withAffinity {
		for _, pi := range ni.GetPodsWithAffinity() {
			if affinitySelects(pi.GetPod().Spec.Affinity, common.LabelPodCliquePodIndex) {
				return false
			}
		}
	}
	return true
}

// affinitySelects reports whether any pod (anti-)affinity term of a selects on label key.
func affinitySelects(a *v1.Affinity, key string) bool {
	if a == nil {
		return false
	}
	var terms []v1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if selectorUses(t.LabelSelector, key) || slices.Contains(t.MatchLabelKeys, key) || slices.Contains(t.MismatchLabelKeys, key) {
			return true
		}
	}
	return false
}

func selectorUses(s *metav1.LabelSelector, key string) bool {
	if s == nil {
		return false
	}
	if _, ok := s.MatchLabels[key]; ok {
		return true
	}
	return slices.ContainsFunc(s.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool { return r.Key == key })
}

// candidates are the nodes a member of the gang's PodGroup may be planned on: those of the
// topology plugin's domain for it (the preferred domain when it holds the rest of the set,
// as that plugin narrows to it), else every node.
func (p *Plugin) candidates(key, group string, all []fwk.NodeInfo) []fwk.NodeInfo {
	gp := p.gangs.Plan(key)
	if gp.Plan == nil {
		return all
	}
	allowed := gp.Plan.AllowedNodes(group)
	if preferred := gp.Plan.PreferredNodes(group); preferred != nil && gp.PodGang != nil && !p.gangs.MissedPreference(key, gp.PodGang.UID) {
		if allowed != nil {
			preferred = allowed.Intersection(preferred)
		}
		if preferred.Len() > 0 {
			allowed = preferred
		}
	}
	if allowed == nil {
		return all
	}
	out := make([]fwk.NodeInfo, 0, allowed.Len())
	for _, ni := range all {
		if allowed.Has(ni.Node().Name) {
			out = append(out, ni)
		}
	}
	return out
}

// filterSim is memberplan.Simulator over the scheduler's filters: nodes are copied from the
// snapshot on first use and hold the members planned on them; the cycle state (a clone of the
// first member's) is told of each with the PreFilter plugins' AddPod extensions, as preemption
// does when it tries a node with pods removed.
type filterSim struct {
	ctx     context.Context
	runner  planRunner
	state   fwk.CycleState
	rep     *v1.Pod
	members []*v1.Pod
	nodes   []fwk.NodeInfo
	copies  map[int]fwk.NodeInfo
}

// copyOf returns node i as the plan has it, holding the pods already added.
func (s *filterSim) copyOf(i int, add ...*v1.Pod) fwk.NodeInfo {
	if s.copies == nil {
		s.copies = map[int]fwk.NodeInfo{}
	}
	c, ok := s.copies[i]
	if !ok {
		c = s.nodes[i].Snapshot()
		s.copies[i] = c
	}
	for _, pod := range add {
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			continue
		}
		s.runner.RunPreFilterExtensionAddPod(s.ctx, s.state, s.rep, pi, c)
		c.AddPodInfo(pi)
	}
	return c
}

func (s *filterSim) Fits(member, node int) bool {
	return s.runner.RunFilterPlugins(s.ctx, s.state, s.members[member], s.copyOf(node)).IsSuccess()
}

func (s *filterSim) Place(member, node int) { s.copyOf(node, s.members[member]) }

// planMissed handles a member whose planned node failed the filters: the plan was wrong about
// it, not the gang about the cluster. It is tried again at once over its gang's domain, and
// its attempt goes on.
func (p *Plugin) planMissed(pod *v1.Pod, node string) *fwk.Status {
	schedmetrics.MemberPlan(schedmetrics.PlanRefused)
	p.activate([]*v1.Pod{pod})
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
		"the node planned for pod %s, %s, no longer fits it; it is tried again on every node of its gang's domain", pod.Name, node))
}

// plannedOnly is the PreFilterResult that narrows a planned member to its node.
func plannedOnly(node string) *fwk.PreFilterResult {
	return &fwk.PreFilterResult{NodeNames: sets.New(node)}
}
