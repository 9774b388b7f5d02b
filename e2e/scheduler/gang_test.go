package schedulere2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func workers(replicas int32, cpu string) []group {
	return []group{{name: "w", min: replicas, replicas: replicas, cpu: cpu}}
}

// Scenario 1: a gang that fits is bound completely; one that does not leaves all its pods
// pending, and its PodGang says why in gang terms — once, as one event.
func TestGangThatFitsIsBoundWholeAndOneThatDoesNotStaysPendingSayingWhy(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.addNodes(node{name: "n1", cpu: "4"}, node{name: "n2", cpu: "4"}, node{name: "n3", cpu: "4"}, node{name: "n4", cpu: "4"})

	e.createGang(gang{name: "fits", groups: workers(6, "2")})
	assert.Equal(t, 0, e.waitBound("fits", 6).pending)
	e.waitScheduledCondition("fits", metav1.ConditionTrue, "6 of 6 required pods are bound")
	assert.Equal(t, v1alpha1.PodGangPhaseStarting, e.podGang("fits").Status.Phase, "bound, not running (no kubelet)")

	// 4 CPU are left: room for 2 of the 4 pods.
	e.createGang(gang{name: "too-big", groups: workers(4, "2")})
	cond := e.waitScheduledCondition("too-big", metav1.ConditionFalse, "the PodGang needs 4 pods of 2 CPU, 64Mi memory; the nodes it may use fit 2")
	assert.Equal(t, common.ReasonUnschedulable, cond.Reason)
	assert.Equal(t, placement{bound: map[string]int{}, nodes: map[string]int{}, pending: 4}, e.placement("too-big"))
	e.eventually("one GangUnschedulable event", func() (bool, string) {
		n := len(e.gangEvents("too-big", common.EventReasonGangUnschedulable))
		return n == 1, fmt.Sprintf("%d events", n)
	})

	// A new node with room for one more pod makes the scheduler retry the gang; it still does
	// not fit, and the user is not told the same story again.
	e.addNodes(node{name: "n5", cpu: "2"})
	e.waitScheduledCondition("too-big", metav1.ConditionFalse, "the nodes it may use fit 3")
	events := e.gangEvents("too-big", common.EventReasonGangUnschedulable)
	require.Len(t, events, 1, "one event per unplaceable gang, not one per pod or attempt")
	assert.Equal(t, v1.EventTypeWarning, events[0].Type)
	assert.Contains(t, events[0].Note, "the PodGang needs 4 pods of 2 CPU, 64Mi memory; the nodes it may use fit 2")
	assert.Equal(t, 4, e.placement("too-big").pending)
}

// A gang whose pods do not all exist yet says so on its status (after a grace for pods that
// are on their way), and is placed whole once they do.
func TestGangWithoutItsPodsSaysWhatItWaitsFor(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.addNodes(node{name: "n1", cpu: "8"})
	g := gang{name: "incomplete", groups: []group{{name: "leader", min: 1, replicas: 1, cpu: "1"}, {name: "worker", min: 3, replicas: 3, cpu: "1"}}}
	e.createGangObjectOnly(g)
	e.createPods([]*v1.Pod{e.memberPod(g, g.groups[0], 0), e.memberPod(g, g.groups[1], 0)})
	cond := e.waitScheduledCondition("incomplete", metav1.ConditionFalse, `PodGroup "worker" has 1 of 3`)
	assert.Equal(t, common.ReasonWaitingForPods, cond.Reason)
	assert.Equal(t, 0, e.placement("incomplete").total(), "nothing of the gang is placed while its quorum is missing")

	e.createPods([]*v1.Pod{e.memberPod(g, g.groups[1], 1), e.memberPod(g, g.groups[1], 2)})
	e.waitBound("incomplete", 4)
	e.waitScheduledCondition("incomplete", metav1.ConditionTrue, "4 of 4 required pods are bound")
}

// Scenario 2: PodGroups with different minReplicas and members beyond them. The extras never
// take the room of missing quorum members, and once the gang is placed they go without waiting.
func TestPodGroupsWithDifferentMinReplicasAndExtraMembers(t *testing.T) {
	e := newEnv(t, envOptions{})
	// Room for exactly the quorum: 2 prefill + 1 decode pods of 2 CPU.
	e.addNodes(node{name: "n1", cpu: "2"}, node{name: "n2", cpu: "2"}, node{name: "n3", cpu: "2"})
	e.createGang(gang{name: "mixed", groups: []group{
		{name: "decode", min: 1, replicas: 2, cpu: "2"},
		{name: "prefill", min: 2, replicas: 3, cpu: "2"},
	}})
	p := e.waitBound("mixed", 3)
	assert.Equal(t, map[string]int{"prefill": 2, "decode": 1}, p.bound, "the quorum of each PodGroup, no extra")
	assert.Equal(t, 2, p.pending)
	e.waitScheduledCondition("mixed", metav1.ConditionTrue, "3 of 3 required pods are bound")

	// Each new node takes one extra, which binds without waiting for anything (with a 10s
	// Permit timeout, an extra held at the barrier would never bind).
	e.addNodes(node{name: "n4", cpu: "2"})
	e.waitBound("mixed", 4)
	e.addNodes(node{name: "n5", cpu: "2"})
	p = e.waitBound("mixed", 5)
	assert.Equal(t, map[string]int{"prefill": 3, "decode": 2}, p.bound)
}

// Scenario 3: gangs whose demand is twice the cluster arrive together. At no moment is a gang
// partly bound, nothing deadlocks, and every gang is placed as earlier gangs' pods are deleted.
func TestContentionTwiceTheClusterNeverPartlyBindsAndPlacesEveryGang(t *testing.T) {
	e := newEnv(t, envOptions{permitTimeout: 5 * time.Second})
	e.addNodes(node{name: "n1", cpu: "8"}, node{name: "n2", cpu: "8"}, node{name: "n3", cpu: "8"}, node{name: "n4", cpu: "8"})
	const gangs, size = 8, 8 // 64 pods of 1 CPU for 32 CPU
	var all []*v1.Pod
	var names []string
	for i := range gangs {
		g := gang{name: fmt.Sprintf("g%d", i), groups: []group{{name: "a", min: size / 2, replicas: size / 2, cpu: "1"}, {name: "b", min: size / 2, replicas: size / 2, cpu: "1"}}}
		names = append(names, g.name)
		e.createGangObjectOnly(g)
		for _, gr := range g.groups {
			for j := range gr.replicas {
				all = append(all, e.memberPod(g, gr, j))
			}
		}
	}
	// All pods of all gangs at once, interleaved.
	interleaved := make([]*v1.Pod, 0, len(all))
	for i := range size {
		for j := range gangs {
			interleaved = append(interleaved, all[j*size+i])
		}
	}
	e.createPods(interleaved)

	placedNow := func() (full []string, state string) {
		var partial []string
		for _, name := range names {
			switch n := e.placement(name).total(); {
			case n == size:
				full = append(full, name)
			case n > 0:
				partial = append(partial, fmt.Sprintf("%s:%d", name, n))
			}
		}
		return full, fmt.Sprintf("placed %v, partly bound %v", full, partial)
	}
	e.eventually("the cluster to fill with 4 whole gangs", func() (bool, string) {
		full, state := placedNow()
		return len(full) == gangs/2 && e.checker.bindingCount() == gangs/2*size, state
	})
	// Delete placed gangs one at a time until every gang was placed once.
	deleted := map[string]bool{}
	for round := 0; ; round++ {
		require.Less(t, round, gangs, "no progress")
		everPlaced := 0
		for _, name := range names {
			if e.checker.placed(name) {
				everPlaced++
			}
		}
		if everPlaced == gangs {
			break
		}
		full, _ := placedNow()
		var victim string
		for _, name := range full {
			if !deleted[name] {
				victim = name
				break
			}
		}
		require.NotEmpty(t, victim)
		deleted[victim] = true
		e.deleteGangPods(victim)
		e.eventually("another gang to take the freed room", func() (bool, string) {
			n := 0
			for _, name := range names {
				if e.checker.placed(name) {
					n++
				}
			}
			return n == everPlaced+1, fmt.Sprintf("%d gangs placed so far", n)
		})
	}
}

// createGangObjectOnly creates a PodGang without its pods.
func (e *env) createGangObjectOnly(g gang) {
	e.t.Helper()
	pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: e.ns, Annotations: g.annotations},
		Spec: v1alpha1.PodGangSpec{TopologyConstraint: g.constraint}}
	mins := map[string]int32{}
	for _, gr := range g.groups {
		mins[gr.name] = gr.min
		pgGroup := v1alpha1.PodGroup{Name: gr.name, MinReplicas: gr.min, TopologyConstraint: gr.constraint, PodReferences: []v1alpha1.NamespacedName{}}
		for i := range gr.replicas {
			pgGroup.PodReferences = append(pgGroup.PodReferences, v1alpha1.NamespacedName{Namespace: e.ns, Name: e.memberPod(g, gr, i).Name})
		}
		pg.Spec.PodGroups = append(pg.Spec.PodGroups, pgGroup)
	}
	e.checker.expect(g.name, mins)
	require.NoError(e.t, e.podGangs.Create(e.ctx, pg))
}

// Scenario 4: a 200-pod gang queued between small gangs is placed whole, and small gangs are
// not blocked by a big gang that does not fit — which is placed once room frees up.
func TestLargeGangIsNotStarvedAndDoesNotBlockSmallOnes(t *testing.T) {
	// Reservations (TestStarvingGangGetsNodesReserved) stay out of this scenario.
	e := newEnv(t, envOptions{reservationDelay: time.Hour})
	var nodes []node
	for i := range 8 {
		nodes = append(nodes, node{name: fmt.Sprintf("n%d", i), cpu: "32"}) // 256 CPU
	}
	e.addNodes(nodes...)
	small := func(name string) gang { return gang{name: name, groups: workers(4, "1")} }
	for i := range 5 {
		e.createGang(small(fmt.Sprintf("s%d", i)))
	}
	e.createGang(gang{name: "big", groups: []group{{name: "leader", min: 1, replicas: 1, cpu: "1"}, {name: "worker", min: 199, replicas: 199, cpu: "1"}}})
	for i := 5; i < 10; i++ {
		e.createGang(small(fmt.Sprintf("s%d", i)))
	}
	e.waitBound("big", 200)
	for i := range 10 {
		e.waitBound(fmt.Sprintf("s%d", i), 4)
	}

	// 16 CPU are left: a second big gang does not fit, small gangs created after it do.
	e.createGang(gang{name: "big2", groups: workers(200, "1")})
	e.waitScheduledCondition("big2", metav1.ConditionFalse, "the PodGang needs 200 pods of 1 CPU, 64Mi memory")
	for i := 10; i < 13; i++ {
		e.createGang(small(fmt.Sprintf("s%d", i)))
	}
	for i := 10; i < 13; i++ {
		e.waitBound(fmt.Sprintf("s%d", i), 4)
	}
	assert.Equal(t, 0, e.placement("big2").total())

	// Freeing the first big gang's room places the second, whole.
	e.deleteGangPods("big")
	e.waitBound("big2", 200)
	e.waitScheduledCondition("big2", metav1.ConditionTrue, "200 of 200 required pods are bound")
}

// Scenario 4, under a stream: small gangs keep a cluster nearly full, one finishing as the next
// arrives, so the room a big gang needs never frees at once. Once the big gang has waited
// GangArgs.ReservationDelay, nodes are reserved for it: the room small gangs free there adds up
// until the big gang fits. Without the reservation it would wait forever: free room stays at 80
// of the 150 CPU it needs. The small gangs it held back are placed once it is done.
func TestStarvingGangGetsNodesReserved(t *testing.T) {
	e := newEnv(t, envOptions{reservationDelay: 2 * time.Second})
	var nodes []node
	for i := range 10 {
		nodes = append(nodes, node{name: fmt.Sprintf("n%d", i), cpu: "32"}) // 320 CPU
	}
	e.addNodes(nodes...)
	small := func(name string) gang { return gang{name: name, groups: workers(8, "1")} }
	// 240 of 320 CPU taken by small gangs; big2 needs 150.
	var running []string
	for i := range 30 {
		name := fmt.Sprintf("s%d", i)
		e.createGang(small(name))
		running = append(running, name)
	}
	for _, name := range running {
		e.waitBound(name, 8)
	}
	e.createGang(gang{name: "big2", groups: workers(150, "1")})
	e.waitScheduledCondition("big2", metav1.ConditionFalse, "the PodGang needs 150 pods of 1 CPU, 64Mi memory; the nodes it may use fit 80")

	// The stream: each round three small gangs finish and three new ones arrive.
	arrived := 0
	round := func() []string {
		for range 3 {
			e.deleteGangPods(running[0])
			running = running[1:]
		}
		var names []string
		for range 3 {
			name := fmt.Sprintf("s%d", 30+arrived)
			arrived++
			e.createGang(small(name))
			running = append(running, name)
			names = append(names, name)
		}
		return names
	}
	// Until the reservation, the new gangs take the freed room (as they would forever without
	// one).
	const reservedNote = "nodes are reserved for it"
	for i := 0; !strings.Contains(e.scheduledMessage("big2"), reservedNote); i++ {
		require.Less(t, i, 20, "no reservation for big2; its status: %s", e.scheduledMessage("big2"))
		for _, name := range round() {
			e.waitBound(name, 8)
		}
	}
	for i := 0; e.placement("big2").total() < 150; i++ {
		require.Less(t, i, 40, "big2 starved: still %d of 150 bound; its status: %s", e.placement("big2").total(), e.scheduledMessage("big2"))
		round()
	}
	e.waitBound("big2", 150)
	e.waitScheduledCondition("big2", metav1.ConditionTrue, "150 of 150 required pods are bound")

	// Every small gang is placed once big2 is done.
	e.deleteGangPods("big2")
	for _, name := range running {
		e.waitBound(name, 8)
	}
}

// Scenario 5: a gang whose last member cannot be attempted waits at the Permit barrier until
// the PodGang's own timeout, then every waiting member is rejected; it is retried after its
// back-off, and placed once the member can be scheduled.
func TestPermitTimeoutRejectsAllMembersAndTheGangIsRetried(t *testing.T) {
	// The plugin's default timeout is long; the PodGang's annotation shortens it.
	e := newEnv(t, envOptions{permitTimeout: 10 * time.Minute})
	e.addNodes(node{name: "n1", cpu: "8"}, node{name: "n2", cpu: "8"})
	// The holder is another scheduler's pod: it counts for the quorum but this scheduler never
	// attempts it, so the workers wait at the barrier for a member that never comes. (A holder
	// whose ResourceClaim does not exist would not do: Grove's DRA plugin keeps the whole gang
	// out of the queue until the claim exists.)
	holder := group{name: "zholder", min: 1, replicas: 1, cpu: "1", pod: func(p *v1.Pod) {
		p.Spec.SchedulerName = "not-this-scheduler"
	}}
	e.createGang(gang{name: "stuck", annotations: map[string]string{common.AnnotationPermitWaitTimeout: "2s"},
		groups: []group{{name: "workers", min: 3, replicas: 3, cpu: "1"}, holder}})
	const why = `timed out after 2s at the Permit barrier; 3 of 4 required pods had a node (PodGroup "zholder" 0 of 1)`
	e.waitScheduledMessage("stuck", metav1.ConditionFalse, "a second timed-out attempt", func(msg string) bool {
		return failedAttempts(msg) >= 2 && strings.HasSuffix(msg, why)
	})
	assert.Equal(t, 0, e.placement("stuck").total(), "rejected members never bind")
	events := e.gangEvents("stuck", common.EventReasonGangUnschedulable)
	require.Len(t, events, 1, "told once, not per attempt")
	assert.Equal(t, "attempt 1 failed: "+why, events[0].Note)

	// Replace the holder with one that can be scheduled: the gang is placed whole.
	require.NoError(t, e.admin.CoreV1().Pods(e.ns).Delete(e.ctx, "stuck-zholder-0", metav1.DeleteOptions{}))
	e.createPods([]*v1.Pod{e.memberPod(gang{name: "stuck"}, group{name: "zholder", cpu: "1"}, 1)})
	p := e.waitBound("stuck", 4)
	assert.Equal(t, map[string]int{"workers": 3, "zholder": 1}, p.bound)
	e.waitScheduledCondition("stuck", metav1.ConditionTrue, "4 of 4 required pods are bound")
}

// A member that fits no node rejects every waiting member at once: with a 10-minute Permit
// timeout, only immediate rejections let the gang fail two attempts within the wait. The member
// needs a pod it must run next to (inter-pod affinity, which the whole-gang pre-check does not
// judge), so the gang passes the pre-check and its other members are assumed first.
func TestMemberThatFitsNoNodeRejectsTheWaitingGangAtOnce(t *testing.T) {
	e := newEnv(t, envOptions{permitTimeout: 10 * time.Minute})
	nodes := e.addNodes(node{name: "n1", cpu: "8"}, node{name: "n2", cpu: "8"})
	picky := group{name: "zpicky", min: 1, replicas: 1, cpu: "1", pod: func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anchor"}},
			TopologyKey:   v1.LabelHostname,
		}}}}
	}}
	e.createGang(gang{name: "nofit", groups: []group{{name: "workers", min: 3, replicas: 3, cpu: "1"}, picky}})
	e.waitScheduledMessage("nofit", metav1.ConditionFalse, "a second failed attempt", func(msg string) bool {
		return failedAttempts(msg) >= 2 && strings.Contains(msg, `pod nofit-zpicky-0 of PodGroup "zpicky" fits no node`)
	})
	assert.Equal(t, 0, e.placement("nofit").total())

	// Once the pod it must run next to is on a node, the gang is placed whole.
	anchor := e.memberPod(gang{name: "anchor"}, group{name: "x", cpu: "100m"}, 0)
	anchor.Name, anchor.Labels, anchor.Spec.NodeName = "anchor", map[string]string{"app": "anchor"}, nodes[1]
	e.createPods([]*v1.Pod{anchor})
	e.waitBound("nofit", 4)
	for _, pod := range e.pods("nofit") {
		if pod.Name == "nofit-zpicky-0" {
			assert.Equal(t, nodes[1], pod.Spec.NodeName, "next to its anchor")
		}
	}
}

// Scenario 7: pods outside gangs on grove-scheduler schedule as with kube-scheduler, next to a
// gang that cannot be placed, and the scheduler's opportunistic batching stays on for them.
func TestPodsOutsideGangsScheduleNormallyAndKeepBatching(t *testing.T) {
	e := newEnv(t, envOptions{deferStart: true})
	e.addNodes(node{name: "n1", cpu: "4"}, node{name: "n2", cpu: "4"}, node{name: "n3", cpu: "4"})
	e.createGang(gang{name: "blocked", groups: workers(20, "1")})
	var plain []*v1.Pod
	for i := range 30 {
		pod := e.memberPod(gang{name: "plain"}, group{name: "x", cpu: "100m"}, int32(i))
		pod.Name = fmt.Sprintf("plain-%d", i)
		pod.Labels = map[string]string{"app": "plain"}
		plain = append(plain, pod)
	}
	// Created before the scheduler starts, they are queued together and scheduled back to back.
	e.createPods(plain)
	e.startScheduler()

	fw := e.sched.Profiles[e.schedulerName]
	require.NotNil(t, fw)
	assert.NotNil(t, fw.SignPod(e.ctx, plain[0]), "Grove's plugins must not disable pod signatures for the profile")
	hints := func() float64 {
		v, err := testutil.GetCounterMetricValue(metrics.BatchAttemptStats.WithLabelValues(e.schedulerName, metrics.BatchAttemptHintUsed))
		require.NoError(t, err)
		return v
	}
	e.eventually("30 plain pods bound", func() (bool, string) {
		list, err := e.admin.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=plain"})
		if err != nil {
			return false, err.Error()
		}
		bound := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 30, fmt.Sprintf("%d bound", bound)
	})
	assert.Positive(t, hints(), "opportunistic batching placed plain pods from node hints")
	assert.Equal(t, 0, e.placement("blocked").total())
}

// The control for the binding checker: kube-scheduler's default profile, which has no gang
// plugin, binds part of a gang that does not fit — and the checker catches it.
func TestBindingCheckerCatchesPartlyBoundGangsOfAPlainScheduler(t *testing.T) {
	e := newEnv(t, envOptions{withoutGrovePlugins: true})
	e.addNodes(node{name: "n1", cpu: "2"}, node{name: "n2", cpu: "2"})
	e.createGang(gang{name: "too-big", groups: workers(4, "2")})
	e.waitBound("too-big", 2)
	// The watcher flags it while the test runs, once the partial binding outlasts the grace.
	var violations []string
	e.eventually("the checker to flag the partly bound gang", func() (bool, string) {
		violations = e.checker.recorded()
		return len(violations) > 0, strings.Join(violations, "; ")
	})
	assert.Equal(t, []string{"PodGang too-big partly bound with no binding for over 3s: 2 bound, short: [w 2/4]"}, violations)
	// This test wants the violation: clear it so the harness does not fail the test for it.
	e.checker.clear()
}
