package gang

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics/legacyregistry"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
)

// planFramework stands for the profile's filters as a member plan runs them: resource fit on
// the node as given (the plan's copy holds the members planned there) and nodes a filter
// refuses outright (a taint, say).
type planFramework struct {
	snapshot *cache.Snapshot
	refuse   map[string]bool
	filtered []string
}

func (f *planFramework) SnapshotSharedLister() fwk.SharedLister { return f.snapshot }

func (f *planFramework) RunFilterPlugins(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	f.filtered = append(f.filtered, ni.Node().Name)
	if f.refuse[ni.Node().Name] || capacity.NodeFree(ni).FitCount(capacity.PodShape(pod)) < 1 {
		return fwk.NewStatus(fwk.Unschedulable, "refused")
	}
	return nil
}

func (f *planFramework) RunPreFilterExtensionAddPod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

// SignPod signs what the scheduler's signature holds of these pods: their gang and PodGroup,
// and their nodeName (set on the assumed pod the framework hands Reserve).
func (f *planFramework) SignPod(_ context.Context, pod *v1.Pod) fwk.PodSignature {
	return fwk.PodSignature(pod.Labels[common.LabelPodGang] + "/" + pod.Labels[common.LabelPodClique] + "/" + pod.Spec.NodeName)
}

// assumed is the pod as the framework hands it to Reserve: a copy bound to node.
func assumed(pod *v1.Pod, node string) *v1.Pod {
	out := pod.DeepCopy()
	out.Spec.NodeName = node
	return out
}

func planNode(name, cpu string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110")}}}
}

// TestGangSchedulingFlowWithPlan: the first member of a gang attempt plans the nodes of the
// rest of its quorum (the filters run once per member, on a copy of the node that holds the
// members planned before it); each later member is narrowed to its planned node
// (PreFilterResult of one node, so the framework filters one node and skips Score); a planned
// node that lost its room since is not handed out, and one the filters refuse sends its member
// back over the whole domain at once — neither fails the gang's attempt.
func TestGangSchedulingFlowWithPlan(t *testing.T) {
	p, a := testPlugin(t)
	h := &flowHandle{activations: a, waiting: map[types.UID]*waitingPod{}}
	p.handle = h
	ctx := t.Context()
	nodes := []*v1.Node{planNode("a", "4"), planNode("b", "2"), planNode("c", "1")}
	f := &planFramework{snapshot: cache.NewSnapshot(nil, nodes)}
	p.runner = f
	infos := func() []fwk.NodeInfo {
		all, err := f.snapshot.NodeInfos().List()
		require.NoError(t, err)
		return all
	}
	pods := record(p, flowGang(p, "p", 4, 4)...)
	schedmetrics.Register()
	plans := memberPlans(t)
	permit := func(s fwk.CycleState, pod *v1.Pod, node string) fwk.Code {
		st, _ := p.Permit(ctx, s, pod, node)
		if st.Code() == fwk.Wait {
			h.waiting[pod.UID] = &waitingPod{pod: pod}
		}
		return st.Code()
	}

	// The first member gets node a; its Reserve plans the other three: most room first, one
	// member per node a round — a (which holds the first member), b, c.
	s0, _ := cycle()
	res, st := p.PreFilter(ctx, s0, pods[0], infos())
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Nil(t, res, "the first member is not narrowed")
	require.Nil(t, p.Reserve(ctx, s0, assumed(pods[0], "a"), "a"))
	assert.Equal(t, []string{"a", "b", "c"}, f.filtered, "one Filter call per planned member")
	require.Equal(t, fwk.Wait, permit(s0, pods[0], "a"))

	// The second member: its planned node only; Filter turns any other node (a batching hint)
	// away.
	s1, _ := cycle()
	res, st = p.PreFilter(ctx, s1, pods[1], infos())
	require.True(t, st.IsSuccess(), "%v", st)
	require.NotNil(t, res)
	assert.Equal(t, []string{"a"}, res.NodeNames.UnsortedList())
	// The snapshot lists its nodes in no fixed order: each is picked by name.
	for _, ni := range infos() {
		if ni.Node().Name == "a" {
			assert.Nil(t, p.Filter(ctx, s1, pods[1], ni))
		} else {
			assert.Equal(t, fwk.UnschedulableAndUnresolvable, p.Filter(ctx, s1, pods[1], ni).Code(), ni.Node().Name)
		}
	}
	assert.Equal(t, map[string]float64{schedmetrics.PlanHandedOut: 1}, plans.since(t))
	f.filtered = nil
	require.Nil(t, p.Reserve(ctx, s1, assumed(pods[1], "a"), "a"))
	assert.Empty(t, f.filtered, "a planned member plans nothing")
	require.Equal(t, fwk.Wait, permit(s1, pods[1], "a"))

	// Another pod took node b's room since: the third member is not handed b, it goes over the
	// domain (every node).
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}, Spec: v1.PodSpec{NodeName: "b",
		Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}}}}
	f.snapshot = cache.NewSnapshot([]*v1.Pod{other}, nodes)
	s2, _ := cycle()
	res, st = p.PreFilter(ctx, s2, pods[2], infos())
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Nil(t, res, "a planned node without room is not handed out")
	assert.Equal(t, map[string]float64{schedmetrics.PlanHandedOut: 1, schedmetrics.PlanStale: 1}, plans.since(t))
	require.Nil(t, p.Reserve(ctx, s2, assumed(pods[2], "a"), "a"))
	require.Equal(t, fwk.Wait, permit(s2, pods[2], "a"))

	// The fourth member's node c is refused by a filter now: its cycle fails on c, and
	// PostFilter sends it straight back to the queue without failing the attempt.
	f.refuse = map[string]bool{"c": true}
	s3, _ := cycle()
	res, st = p.PreFilter(ctx, s3, pods[3], infos())
	require.True(t, st.IsSuccess(), "%v", st)
	require.NotNil(t, res)
	assert.Equal(t, []string{"c"}, res.NodeNames.UnsortedList())
	a.pods = nil
	_, st = p.PostFilter(ctx, s3, pods[3], nil)
	assert.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code(), "the other PostFilter plugins (preemption) are not asked")
	assert.Equal(t, []string{"ns/p-3"}, a.pods, "tried again at once")
	assert.Equal(t, map[string]float64{schedmetrics.PlanHandedOut: 2, schedmetrics.PlanStale: 1, schedmetrics.PlanRefused: 1}, plans.since(t))
	assert.Empty(t, p.ledger.Reason("ns/p"), "the attempt goes on")
	for _, w := range h.waiting {
		assert.Empty(t, w.rejected, "nobody waiting at the barrier is rejected")
	}

	// Its retry goes over the domain, gets a node, and the barrier opens; the plan is gone.
	s4, _ := cycle()
	res, st = p.PreFilter(ctx, s4, pods[3], infos())
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Nil(t, res, "a member is handed its planned node once")
	require.Nil(t, p.Reserve(ctx, s4, assumed(pods[3], "a"), "a"))
	require.Equal(t, fwk.Success, permit(s4, pods[3], "a"))
	for _, pod := range pods[:3] {
		assert.True(t, h.waiting[pod.UID].allowed, "%s is released", pod.Name)
	}
	assert.Equal(t, 0, p.plans.Len())
}

// A member whose gang plans nothing (no signatures: the profile cannot tell which members are
// alike) goes the ordinary way.
func TestNoPlanWithoutSignatures(t *testing.T) {
	p, _ := testPlugin(t)
	f := &noSignatures{planFramework{snapshot: cache.NewSnapshot(nil, []*v1.Node{planNode("a", "4")})}}
	p.runner = f
	pods := record(p, flowGang(p, "q", 2, 2)...)
	all, _ := f.snapshot.NodeInfos().List()
	s0, _ := cycle()
	_, st := p.PreFilter(t.Context(), s0, pods[0], all)
	require.True(t, st.IsSuccess(), "%v", st)
	require.Nil(t, p.Reserve(t.Context(), s0, pods[0], "a"))
	assert.Empty(t, f.filtered)
	assert.Equal(t, 0, p.plans.Len())
}

type noSignatures struct{ planFramework }

func (*noSignatures) SignPod(context.Context, *v1.Pod) fwk.PodSignature { return nil }

// planCounts reads grove_scheduler_member_plans_total from the registry, to compare with a
// reading taken earlier (other tests of the package count too).
type planCounts map[string]float64

func memberPlans(t *testing.T) planCounts {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	out := planCounts{}
	for _, f := range families {
		if f.GetName() != "grove_scheduler_member_plans_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// since returns the outcomes that grew since c was read, by how much.
func (c planCounts) since(t *testing.T) map[string]float64 {
	grown := map[string]float64{}
	for o, v := range memberPlans(t) {
		if d := v - c[o]; d != 0 {
			grown[o] = d
		}
	}
	return grown
}

// Which affinity terms make the pod index matter: any (anti-)affinity term, required or
// preferred, whose selector or label-key lists name the label.
func TestAffinitySelects(t *testing.T) {
	key := common.LabelPodCliquePodIndex
	term := func(s *metav1.LabelSelector, matchKeys ...string) v1.PodAffinityTerm {
		return v1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: s, MatchLabelKeys: matchKeys}
	}
	byLabel := &metav1.LabelSelector{MatchLabels: map[string]string{key: "0"}}
	byExpression := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
	other := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	cases := []struct {
		name string
		a    *v1.Affinity
		want bool
	}{
		{"none", nil, false},
		{"node affinity only", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}, false},
		{"anti-affinity on another label", &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term(other)}}}, false},
		{"required anti-affinity by label", &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term(byLabel)}}}, true},
		{"preferred affinity by expression", &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term(byExpression)}}}}, true},
		{"matchLabelKeys", &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term(other, key)}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, affinitySelects(tc.a, key)) })
	}
}

// Members that are not alike (each signs differently) are planned for nobody; each member's
// Reserve looks at the pending ones again, and each is signed once per attempt, not once per
// Reserve: a gang of n used to cost n²/2 signatures.
func TestUnlikeMembersAreSignedOncePerAttempt(t *testing.T) {
	p, _ := testPlugin(t)
	f := &eachUnlike{planFramework: planFramework{snapshot: cache.NewSnapshot(nil, []*v1.Node{planNode("a", "64")})}}
	p.runner = f
	const n = 8
	pods := record(p, flowGang(p, "u", n, n)...)
	all, _ := f.snapshot.NodeInfos().List()
	for _, pod := range pods {
		s, _ := cycle()
		_, st := p.PreFilter(t.Context(), s, pod, all)
		require.True(t, st.IsSuccess(), "%v", st)
		require.Nil(t, p.Reserve(t.Context(), s, assumed(pod, "a"), "a"))
	}
	assert.Empty(t, f.filtered, "nobody alike: nothing planned")
	// Each Reserve signs its own pod; each other member is signed the first time it is looked at.
	assert.LessOrEqual(t, f.signs, 2*n, "signatures for a gang of %d", n)
}

// eachUnlike signs every pod differently.
type eachUnlike struct {
	planFramework
	signs int
}

func (f *eachUnlike) SignPod(_ context.Context, pod *v1.Pod) fwk.PodSignature {
	f.signs++
	return fwk.PodSignature(pod.Name)
}

// roomiest is the head of a stable sort of the nodes by free CPU, then memory, whatever the
// head's length: ties keep the snapshot's order.
func TestRoomiestIsTheHeadOfTheStableRanking(t *testing.T) {
	var nodes []*v1.Node
	cpus := []string{"2", "4", "1", "4", "3", "2", "4", "1", "3", "2", "4", "500m"}
	for i, cpu := range cpus {
		n := planNode(fmt.Sprintf("n%02d", i), cpu)
		if i%3 == 0 {
			n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("2Gi")
		}
		nodes = append(nodes, n)
	}
	all, err := cache.NewSnapshot(nil, nodes).NodeInfos().List()
	require.NoError(t, err)
	full := slices.Clone(all)
	sort.SliceStable(full, func(i, j int) bool {
		x, y := capacity.NodeFree(full[i]), capacity.NodeFree(full[j])
		return x.MilliCPU > y.MilliCPU || x.MilliCPU == y.MilliCPU && x.Memory > y.Memory
	})
	names := func(ns []fwk.NodeInfo) []string {
		out := make([]string, len(ns))
		for i, ni := range ns {
			out[i] = ni.Node().Name
		}
		return out
	}
	for head := 1; head <= len(all)+2; head++ {
		assert.Equal(t, names(full[:min(head, len(full))]), names(roomiest(all, head)), "head %d", head)
	}
}

// A plan made over the head of the ranking is the plan made over every node: when the filters
// refuse so many of the roomiest nodes that the head cannot give each member a node of its
// own, the plan is made again over all of them instead of doubling members up in the head.
func TestPlanOverTheHeadIsThePlanOverAllNodes(t *testing.T) {
	for _, refused := range []int{0, 4, headFor(3) - 1, headFor(3) + 3} {
		t.Run(fmt.Sprintf("%d roomiest nodes refused", refused), func(t *testing.T) {
			p, _ := testPlugin(t)
			var nodes []*v1.Node
			f := &planFramework{refuse: map[string]bool{}}
			for i := range 40 {
				// Roomier first, each holding two members.
				nodes = append(nodes, planNode(fmt.Sprintf("n%02d", i), fmt.Sprintf("%dm", 4000-10*i)))
				if i < refused {
					f.refuse[nodes[i].Name] = true
				}
			}
			f.snapshot = cache.NewSnapshot(nil, nodes)
			p.runner = f
			all, err := f.snapshot.NodeInfos().List()
			require.NoError(t, err)
			pods := flowGang(p, "p", 4, 4)
			for _, pod := range pods {
				pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}
			}
			members, uids := pods[1:], []types.UID{pods[1].UID, pods[2].UID, pods[3].UID}
			s, _ := cycle()

			overAll := p.assignMembers(t.Context(), s, pods[0], "", members, uids, all, len(all))
			require.Len(t, overAll, 3)
			assert.Len(t, sets.New(slices.Collect(maps.Values(overAll))...), 3, "one member a node: the first pass suffices")

			f.filtered = nil
			planned := p.assignMembers(t.Context(), s, pods[0], "", members, uids, all, headFor(3))
			if planned == nil {
				assert.Greater(t, refused, headFor(3)-3, "the head had a node for each member")
				planned = p.assignMembers(t.Context(), s, pods[0], "", members, uids, all, len(all))
			} else {
				assert.LessOrEqual(t, len(f.filtered), headFor(3), "the filters ran on the head only")
			}
			assert.Equal(t, overAll, planned)
		})
	}
}
