package schedulere2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// A failed node costs its pods, not the replica: grove-operator deletes the lost members and
// the PodClique creates replacements with the same index. grove-scheduler must put each
// replacement back inside the domain the rest of its gang (and its PodCliqueSet replica)
// occupies, never evict the survivors for it, preempt only inside that domain, and otherwise
// wait saying so.

// cordon marks a node unschedulable, as a failed node is (no kubelet runs here: a NotReady
// node's taints would do the same to the scheduler).
func (e *env) cordon(name string) {
	e.t.Helper()
	require.NoError(e.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.admin.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = true
		_, err = e.admin.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	}))
}

// loseMembers plays a node failure: the node is cordoned, the members of gang g on it are
// deleted (as grove-operator deletes a failed node's pods) and each gets a replacement of the
// same name (its PodClique index) with a new UID, returned by name. The binding checker stops
// judging the gang: from the deletion until the replacement binds it is partly bound by design.
func (e *env) loseMembers(g gang, node string) map[string]types.UID {
	e.t.Helper()
	e.checker.retire(g.name)
	e.cordon(node)
	var lost []*v1.Pod
	for _, gr := range g.groups {
		for i := range gr.replicas {
			pod, err := e.admin.CoreV1().Pods(e.ns).Get(e.ctx, fmt.Sprintf("%s-%s-%d", g.name, gr.name, i), metav1.GetOptions{})
			require.NoError(e.t, err)
			if pod.Spec.NodeName != node {
				continue
			}
			require.NoError(e.t, e.admin.CoreV1().Pods(e.ns).Delete(e.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
			lost = append(lost, e.memberPod(g, gr, i))
		}
	}
	require.NotEmpty(e.t, lost, "gang %s has no member on node %s", g.name, node)
	e.eventually("the lost members to be gone", func() (bool, string) {
		for _, pod := range lost {
			if _, err := e.admin.CoreV1().Pods(e.ns).Get(e.ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, pod.Name + " still exists"
			}
		}
		return true, ""
	})
	out := map[string]types.UID{}
	for _, pod := range lost {
		created, err := e.admin.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
		require.NoError(e.t, err)
		out[created.Name] = created.UID
	}
	return out
}

// podNodes maps each of the gang's pods (by UID) to its node ("" while pending).
func (e *env) podNodes(gangName string) map[types.UID]string {
	out := map[types.UID]string{}
	for _, pod := range e.pods(gangName) {
		out[pod.UID] = pod.Spec.NodeName
	}
	return out
}

// withReplacements is before without the pods lost on node and with the replacements on their
// expected nodes: the exact placement a replacement must lead to.
func withReplacements(before map[types.UID]string, lostNode string, replacements map[types.UID]string) map[types.UID]string {
	out := map[types.UID]string{}
	for uid, n := range before {
		if n != lostNode {
			out[uid] = n
		}
	}
	for uid, n := range replacements {
		out[uid] = n
	}
	return out
}

// waitPlacement waits until the gang's pods are exactly want (UID → node).
func (e *env) waitPlacement(gangName string, want map[types.UID]string) {
	e.t.Helper()
	e.eventually("gang "+gangName+" placed as "+fmt.Sprint(want), func() (bool, string) {
		got := e.podNodes(gangName)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
}

// freeNodes lists the nodes of names that hold none of the gangs' pods.
func (e *env) freeNodes(names []string, gangs ...string) []string {
	used := map[string]bool{}
	for _, g := range gangs {
		for _, n := range e.podNodes(g) {
			used[n] = true
		}
	}
	var out []string
	for _, n := range names {
		if !used[n] {
			out = append(out, n)
		}
	}
	return out
}

// occupy binds a pod of another scheduler to node, taking cpu of its room.
func (e *env) occupy(name, node, cpu string) {
	e.t.Helper()
	pod := e.memberPod(gang{name: name}, group{name: "o", cpu: cpu}, 0)
	pod.Labels = nil
	pod.Spec.NodeName = node
	e.createPods([]*v1.Pod{pod})
}

// schedulingFailures is how often this test's scheduler found a pod unschedulable or failed it
// with an error (both go back to the queue).
func (e *env) schedulingFailures() float64 {
	e.t.Helper()
	counters, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "scheduler_schedule_attempts_total",
		map[string]string{"profile": e.schedulerName}, "result")
	require.NoError(e.t, err)
	return counters["unschedulable"] + counters["error"]
}

// firstNode is the first node, by name, of a placement: the one the test fails.
func firstNode(placed map[types.UID]string) string {
	var first string
	for _, n := range placed {
		if n != "" && (first == "" || n < first) {
			first = n
		}
	}
	return first
}

func gangOf(name string, n int32, cpu string, constraint *v1alpha1.TopologyConstraint, pod func(*v1.Pod)) gang {
	return gang{name: name, constraint: constraint, groups: []group{{name: "w", min: n, replicas: n, cpu: cpu, pod: pod}}}
}

// (a) A rack-bound gang that loses a member gets it back on the free node of its own rack; rack
// r0 has a free node too, and for one pod alone it is as tight a fit and sorts first. The
// survivors stay where they are.
func TestReplacementStaysInTheRackOfItsGang(t *testing.T) {
	e := newEnv(t, envOptions{})
	r1 := e.addNodes(rack("a0", "2", "r1"), rack("a1", "2", "r1"), rack("a2", "2", "r1"),
		rack("a3", "2", "r1"), rack("a4", "2", "r1"), rack("a5", "2", "r1"))
	r0 := e.addNodes(rack("z0", "2", "r0"), rack("z1", "2", "r0"))
	e.occupy("other-r0", r0[0], "2")
	g := gangOf("g", 4, "2", required(rackKey), nil)
	e.createGang(g)
	onlyOn(t, e.waitBound("g", 4), e.nodesWithLabel(rackKey, "r1"), "g")
	// Of r1's two free nodes, one is taken by a pod of another scheduler: the replacement has
	// exactly one node to go to in its rack.
	free := e.freeNodes(r1, "g")
	require.Len(t, free, 2)
	e.occupy("other-r1", free[0], "2")

	before := e.podNodes("g")
	lost := firstNode(before)
	repl := e.loseMembers(g, lost)
	require.Len(t, repl, 1)
	var replUID types.UID
	for _, uid := range repl {
		replUID = uid
	}
	e.waitPlacement("g", withReplacements(before, lost, map[types.UID]string{replUID: free[1]}))
	e.waitScheduledCondition("g", metav1.ConditionTrue, "4 of 4 required pods are bound")
	assert.Equal(t, 1.0, *e.podGang("g").Status.PlacementScore, "one rack")
}

// (b) A PodCliqueSet replica shares one block (sharedTopologyConstraint), each of its PodGangs
// one rack. The node that held a whole PodGang fails: its replacements must stay in the block
// the replica's other PodGang pins — in the other rack of that block, its own being full —
// although another block has more room.
func TestReplacementStaysInTheBlockOfItsReplica(t *testing.T) {
	e := newEnv(t, envOptions{})
	inBlock := func(name, block, r string) node {
		return node{name: name, cpu: "2", labels: map[string]string{blockKey: block, rackKey: r}}
	}
	shared := &v1alpha1.SharedTopologyConstraint{Group: "replica", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(blockKey)}}
	base := gang{name: "base", shared: shared, constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1"}}}
	scaled := gang{name: "scaled", shared: shared, constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1"}}}
	// One node per rack at first, so where each PodGang lands is known: base fills r1's node
	// (the racks are equally tight, r1 sorts first), scaled r2's.
	e.addNodes(inBlock("r1-0", "b1", "r1"), inBlock("r2-0", "b1", "r2"))
	e.createGang(base)
	e.waitBound("base", 2)
	e.createGang(scaled)
	e.waitBound("scaled", 2)
	require.Equal(t, map[string]int{e.nodeName("r1-0"): 2}, e.placement("base").nodes)
	require.Equal(t, map[string]int{e.nodeName("r2-0"): 2}, e.placement("scaled").nodes)
	// Room appears in r2 (block b1) and in block b2, which has more of it.
	e.addNodes(inBlock("r2-1", "b1", "r2"), inBlock("r3-0", "b2", "r3"), inBlock("r3-1", "b2", "r3"), inBlock("r3-2", "b2", "r3"))

	scaledBefore := e.podNodes("scaled")
	repl := e.loseMembers(base, e.nodeName("r1-0"))
	require.Len(t, repl, 2)
	want := map[types.UID]string{}
	for _, uid := range repl {
		want[uid] = e.nodeName("r2-1")
	}
	e.waitPlacement("base", want)
	e.waitScheduledCondition("base", metav1.ConditionTrue, "2 of 2 required pods are bound")
	assert.Equal(t, scaledBefore, e.podNodes("scaled"), "the other PodGang of the replica is untouched")
}

// (b') A member of a rack-bound PodGang whose own rack is full waits in that rack: its
// survivors pin the rack, the replica's block does not widen it.
func TestReplacementOfARackBoundGangDoesNotLeaveItsRack(t *testing.T) {
	e := newEnv(t, envOptions{})
	inBlock := func(name, block, r string) node {
		return node{name: name, cpu: "1", labels: map[string]string{blockKey: block, rackKey: r}}
	}
	shared := &v1alpha1.SharedTopologyConstraint{Group: "replica", PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(blockKey)}}
	base := gang{name: "base", shared: shared, constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1"}}}
	e.addNodes(inBlock("r1-0", "b1", "r1"), inBlock("r1-1", "b1", "r1"))
	e.createGang(base)
	e.waitBound("base", 2)
	e.addNodes(inBlock("r2-0", "b1", "r2"), inBlock("r2-1", "b1", "r2"))
	before := e.podNodes("base")
	e.loseMembers(base, e.nodeName("r1-0"))
	e.waitScheduledCondition("base", metav1.ConditionFalse, `within rack "r1"`)
	assert.Equal(t, 1, e.placement("base").total())
	assert.Equal(t, 1, e.placement("base").pending)
	for uid, n := range before {
		if n == e.nodeName("r1-1") {
			assert.Equal(t, n, e.podNodes("base")[uid], "the survivor stays")
		}
	}
}

// (c) The replacement's rack is full: it preempts the lower-priority gang inside that rack,
// whole, and nothing elsewhere — not even the cheaper gang in the other rack.
func TestReplacementPreemptsOnlyInsideItsRack(t *testing.T) {
	e := newEnv(t, envOptions{})
	lowest, low, high := e.priorityClass("lowest", 100), e.priorityClass("low", 200), e.priorityClass("high", 1000)
	r1 := e.addNodes(rack("a0", "1", "r1"), rack("a1", "1", "r1"), rack("a2", "1", "r1"), rack("a3", "1", "r1"), rack("a4", "1", "r1"))
	g := gangOf("g", 4, "1", required(rackKey), withPriority(high))
	e.createGang(g)
	onlyOn(t, e.waitBound("g", 4), e.nodesWithLabel(rackKey, "r1"), "g")
	// The one node of r1 left goes to a low-priority gang of one pod.
	e.createGang(gangOf("inside", 1, "1", nil, withPriority(low)))
	e.waitBound("inside", 1)
	insideNode := e.freeNodes(r1, "g")
	require.Len(t, insideNode, 1)
	require.Equal(t, map[string]int{insideNode[0]: 1}, e.placement("inside").nodes)
	// Rack r2 comes full of a gang of the lowest priority: a cheaper victim, in the wrong rack.
	e.addNodes(rack("b0", "1", "r2"), rack("b1", "1", "r2"))
	e.createGang(gangOf("outside", 2, "1", nil, withPriority(lowest)))
	e.waitBound("outside", 2)
	outsideBefore := e.podNodes("outside")

	before := e.podNodes("g")
	lost := firstNode(before)
	repl := e.loseMembers(g, lost)
	require.Len(t, repl, 1)
	var replUID types.UID
	for _, uid := range repl {
		replUID = uid
	}
	e.waitPlacement("g", withReplacements(before, lost, map[types.UID]string{replUID: insideNode[0]}))
	assert.Empty(t, e.pods("inside"), "the gang inside the rack was evicted whole")
	assert.Equal(t, outsideBefore, e.podNodes("outside"), "the gang in the other rack is untouched")
	assert.Empty(t, e.gangEvents("outside", common.EventReasonPreempted))
}

// (d) Nothing in the rack can make room: the replacement waits, its PodGang's Scheduled
// condition says for room in which rack, the survivors keep running, nothing is evicted and
// the replacement is not retried in a loop.
func TestReplacementWaitsForRoomInItsRack(t *testing.T) {
	e := newEnv(t, envOptions{})
	r1 := e.addNodes(rack("a0", "1", "r1"), rack("a1", "1", "r1"), rack("a2", "1", "r1"), rack("a3", "1", "r1"), rack("a4", "1", "r1"))
	g := gangOf("g", 4, "1", required(rackKey), nil)
	e.createGang(g)
	onlyOn(t, e.waitBound("g", 4), e.nodesWithLabel(rackKey, "r1"), "g")
	// r1's last node is taken by a gang of the same priority (no victim); r2 has room the
	// replacement may not use.
	e.createGang(gangOf("peer", 1, "1", nil, nil))
	e.waitBound("peer", 1)
	require.Len(t, e.freeNodes(r1, "g", "peer"), 0)
	e.addNodes(rack("b0", "1", "r2"), rack("b1", "1", "r2"), rack("b2", "1", "r2"), rack("b3", "1", "r2"))

	before := e.podNodes("g")
	lost := firstNode(before)
	e.loseMembers(g, lost)
	cond := e.waitScheduledCondition("g", metav1.ConditionFalse, `within rack "r1"`)
	assert.Equal(t, common.ReasonNoDomainFits, cond.Reason)
	t.Logf("Scheduled=%s %s: %s", cond.Status, cond.Reason, cond.Message)
	survivors := withReplacements(before, lost, nil)
	attemptsBefore := e.schedulingFailures()
	require.Positive(t, attemptsBefore, "the replacement was found unschedulable at least once: the counter is read")
	const window = 15 * time.Second
	e.holds("the survivors stay and the replacement waits", window, func() (bool, string) {
		got := e.podNodes("g")
		pending := 0
		for uid, n := range got {
			if n == "" {
				pending++
				continue
			}
			if survivors[uid] != n {
				return false, fmt.Sprintf("pod %s on %q", uid, n)
			}
		}
		return pending == 1 && len(got) == 4, fmt.Sprint(got)
	})
	attempts := e.schedulingFailures() - attemptsBefore
	t.Logf("%.0f failed attempts in %s", attempts, window)
	// The framework's back-off (1 s here) allows one attempt a second if the replacement were
	// requeued at every expiry; it waits for an event that changes its rack instead.
	assert.LessOrEqual(t, attempts, 5.0, "failed attempts of the one waiting replacement in %s", window)
	assert.Equal(t, 1, e.placement("peer").total(), "nothing is evicted")
	assert.Empty(t, e.gangEvents("peer", common.EventReasonPreempted))

	// Room in r1 places it there.
	e.addNodes(rack("a5", "1", "r1"))
	p := e.waitBound("g", 4)
	assert.Equal(t, 1, p.nodes[e.nodeName("a5")])
	e.waitScheduledCondition("g", metav1.ConditionTrue, "4 of 4 required pods are bound")
}

// (e) Replacements never wait at the Permit barrier for a quorum that is already bound: a gang
// that keeps its quorum gets an elastic member back, and a gang that lost members of its quorum
// gets them back although only they are attempted.
func TestReplacementDoesNotWaitForABoundQuorum(t *testing.T) {
	// A Permit timeout far beyond how long the test waits for a binding: a replacement held at
	// the barrier would never be bound in time.
	e := newEnv(t, envOptions{permitTimeout: 10 * waitTimeout})
	e.addNodes(rack("a0", "1", "r1"), rack("a1", "1", "r1"), rack("a2", "1", "r1"), rack("a3", "1", "r1"),
		rack("a4", "1", "r1"), rack("a5", "1", "r1"))
	e.addNodes(rack("b0", "1", "r2"), rack("b1", "1", "r2"), rack("b2", "1", "r2"), rack("b3", "1", "r2"),
		rack("b4", "1", "r2"), rack("b5", "1", "r2"), rack("b6", "1", "r2"))
	// elastic: minAvailable 2 of 4; quorum: a leader (1 of 1) and workers (2 of 2), all required.
	elastic := gang{name: "elastic", constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 4, cpu: "1"}}}
	quorum := gang{name: "quorum", constraint: required(rackKey), groups: []group{
		{name: "leader", min: 1, replicas: 1, cpu: "1"}, {name: "worker", min: 2, replicas: 2, cpu: "1"}}}
	e.createGang(elastic)
	e.waitBound("elastic", 4)
	e.createGang(quorum)
	e.waitBound("quorum", 3)
	// Room for both replacements next to their gangs.
	e.addNodes(rack("a6", "1", "r1"), rack("b7", "1", "r2"), rack("c0", "1", "r3"))

	for _, g := range []gang{elastic, quorum} {
		before := e.podNodes(g.name)
		lost := firstNode(before)
		e.loseMembers(g, lost)
		p := e.waitBound(g.name, len(before))
		var rackOf string
		for _, n := range []string{"r1", "r2"} {
			if e.nodesWithLabel(rackKey, n)[lost] {
				rackOf = n
			}
		}
		onlyOn(t, p, e.nodesWithLabel(rackKey, rackOf), g.name)
		for uid, n := range before {
			if n != lost {
				assert.Equal(t, n, e.podNodes(g.name)[uid], "survivor of %s", g.name)
			}
		}
	}
}

// A replacement waiting for room in its rack holds back only what could take that room: the
// elastic pods of another gang of the same priority are placed in another rack meanwhile (the
// room there is of no use to the replacement), and keep off the replacement's rack.
func TestWaitingReplacementDoesNotHoldBackElasticPodsElsewhere(t *testing.T) {
	e := newEnv(t, envOptions{})
	r1 := e.addNodes(rack("a0", "1", "r1"), rack("a1", "1", "r1"), rack("a2", "1", "r1"), rack("a3", "1", "r1"), rack("a4", "1", "r1"))
	g := gangOf("g", 4, "1", required(rackKey), nil)
	e.createGang(g)
	onlyOn(t, e.waitBound("g", 4), e.nodesWithLabel(rackKey, "r1"), "g")
	e.createGang(gangOf("peer", 1, "1", nil, nil))
	e.waitBound("peer", 1)
	require.Empty(t, e.freeNodes(r1, "g", "peer"))
	e.addNodes(rack("b0", "1", "r2"), rack("b1", "1", "r2"), rack("b2", "1", "r2"))

	before := e.podNodes("g")
	lost := firstNode(before)
	e.loseMembers(g, lost)
	e.waitScheduledCondition("g", metav1.ConditionFalse, `within rack "r1"`)

	// One pod of quorum and two elastic ones, free to go anywhere: r2 holds all three.
	e.createGang(gang{name: "loose", groups: []group{{name: "w", min: 1, replicas: 3, cpu: "1"}}})
	onlyOn(t, e.waitBound("loose", 3), e.nodesWithLabel(rackKey, "r2"), "loose")
	assert.Equal(t, 1, e.placement("g").pending, "the replacement still waits for r1")

	// Room in r1 is the replacement's, not loose's (none of whose pods waits any more).
	e.addNodes(rack("a5", "1", "r1"))
	p := e.waitBound("g", 4)
	assert.Equal(t, 1, p.nodes[e.nodeName("a5")])
}
