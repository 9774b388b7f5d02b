package controller_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

func budgetOf(v intstr.IntOrString) *corev1alpha1.RollingUpdateConfiguration {
	return &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: &v}
}

// waitRunning waits until every pod of the PodCliqueSet is ready and the tracker saw it so.
func (e *env) waitRunning(tr *podTracker, name string, replicas int32, pods int) {
	e.t.Helper()
	e.eventually(func(c *assert.CollectT) {
		got := e.pcs(c, name)
		assert.Equal(c, replicas, got.Status.AvailableReplicas)
		assert.Len(c, e.podsOf(c), pods)
		assert.True(c, tr.atFullStrength(), "every pod ready before the update starts")
	})
	tr.reset()
}

// TestMaxUnavailableBudgets: a router of 4 pods with maxUnavailable 2 and a scaling group of 4
// replicas with maxUnavailable 50% are updated two at a time, never more: the budgets are
// both reached (so the update is faster than one at a time) and never exceeded.
func TestMaxUnavailableBudgets(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "budget", 1)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 4
	pcs.Spec.Template.Clique("router").RollingUpdate = budgetOf(intstr.FromInt32(2))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budgetOf(intstr.FromString("50%"))
	e.create(pcs)
	tr := e.trackPods(fullStrength("budget", 1, 4, 4))
	e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "budget", 1, 16)

	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitUpdated("budget", 1)

	deletions, shortPods, shortGroupReplicas, _ := tr.snapshot()
	assert.Len(t, deletions, 16, "each pod deleted once")
	assert.Equal(t, map[string]int{"budget-0-router": 2}, shortPods, "router: at most maxUnavailable 2 pods down, and the budget used")
	assert.Equal(t, map[string]int{"budget-0-workers": 2}, shortGroupReplicas, "group: at most 50%% of 4 replicas down, and the budget used")
}

// TestScaleInDuringRolloutSharesTheBudget: a scale-in of the scaling group from 4 to 2 replicas
// while its update runs with maxUnavailable 1 completes, and the replicas that stay are never
// more than one short of ready at a time.
func TestScaleInDuringRolloutSharesTheBudget(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "shrink", 1)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
	e.create(pcs)
	tr := e.trackPods(fullStrength("shrink", 1, 2, 1)) // the two replicas that stay
	e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "shrink", 1, 13)

	e.update(pcs, func() { relabel(pcs, "v2") })
	e.eventually(func(c *assert.CollectT) {
		assert.NotNil(c, e.pcsg(c, "shrink-0-workers").Status.UpdateProgress)
	})
	group := e.pcsg(t, "shrink-0-workers")
	e.update(group, func() { group.Spec.Replicas = 2 })
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, e.podsOf(c), 7)
		for _, p := range e.podsOf(c) {
			assert.Equal(c, "v2", p.Labels["version"])
			assert.True(c, isReady(&p))
		}
	})
	_, _, shortGroupReplicas, _ := tr.snapshot()
	assert.LessOrEqual(t, shortGroupReplicas["shrink-0-workers"], 1, "one group replica down at a time, scale-in included")
}

// TestCoherentNeverMixesVersions: under Coherent a replica's router and workers move together:
// no replica ever has ready pods of both templates at once, and the two replicas go one after
// the other (the default budget of 1).
func TestCoherentNeverMixesVersions(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "coh", 2)
	pcs.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.CoherentStrategy}
	relabel(pcs, "v1")
	e.create(pcs)
	tr := e.trackPods(fullStrength("coh", 2, 2, 1))
	events, stop := e.watchAll(&corev1.PodList{})
	var mu sync.Mutex
	mixed := map[string]bool{}
	go func() {
		ready := map[string]map[string]string{} // replica -> pod -> version of ready pods
		for ev := range events {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			r := p.Labels[apicommon.LabelPodCliqueSetReplicaIndex]
			if ready[r] == nil {
				ready[r] = map[string]string{}
			}
			if ev.Type == watch.Deleted || p.DeletionTimestamp != nil || !isReady(p) {
				delete(ready[r], p.Name)
			} else {
				ready[r][p.Name] = p.Labels["version"]
			}
			versions := map[string]bool{}
			for _, v := range ready[r] {
				versions[v] = true
			}
			if len(versions) > 1 {
				mu.Lock()
				mixed[r] = true
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(stop)
	e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "coh", 2, 14)

	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitUpdated("coh", 2)
	mu.Lock()
	assert.Empty(t, mixed, "replicas that served both versions at once")
	mu.Unlock()
	_, _, _, shortReplicas := tr.snapshot()
	assert.Equal(t, 1, shortReplicas, "one replica at a time")
}

// TestProgressDeadline: an update whose new pods never come up (nothing schedules them) is
// reported ProgressDeadlineExceeded once the router's progressDeadline passes; nothing else is
// torn down: the group's pods and the other ready pods stay, and no further pod is deleted.
func TestProgressDeadline(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "stuck", 1)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 3
	pcs.Spec.Template.Clique("router").RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{
		ProgressDeadline: &metav1.Duration{Duration: 3 * time.Second}}
	e.create(pcs)
	tr := e.trackPods(fullStrength("stuck", 1, 2, 3))
	sched := e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "stuck", 1, 9)
	e.eventually(func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(e.pcs(c, "stuck").Status.Conditions, apicommon.ConditionUpdateInProgress)
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonNoActiveUpdate, cond.Reason)
		}
	})

	sched.pause(true)
	e.update(pcs, func() { pcs.Spec.Template.Clique("router").Labels = map[string]string{"version": "v2"} })
	e.eventually(func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(e.pcs(c, "stuck").Status.Conditions, apicommon.ConditionUpdateInProgress)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionUnknown, cond.Status)
			assert.Equal(c, apicommon.ReasonProgressDeadlineExceeded, cond.Reason)
			assert.Contains(c, cond.Message, "1 of 1 PodCliques being updated passed their progressDeadline (stuck-0-router)")
		}
	})
	deletions, _, _, _ := tr.snapshot()
	assert.Len(t, deletions, 1, "only the one router pod the budget allowed was replaced")
	ready := 0
	for _, p := range e.podsOf(t) {
		if isReady(&p) {
			ready++
		}
	}
	assert.Equal(t, 8, ready, "every other pod still serves")
}

// TestUpdateInProgressPerComponent: each standalone PodClique and scaling group reports its own
// UpdateInProgress, as upstream Grove does: NoActiveUpdate before the update; while nothing
// schedules the new pods, the router (progressDeadline 2s) turns ProgressDeadlineExceeded and
// the group (no deadline) stays Progressing; once the pods run, both are NoActiveUpdate again.
// The PodCliqueSet's condition is rolled up from theirs (upstream #817): Unknown with the
// stuck children counted per kind while one is past its deadline, False when none is updating.
func TestUpdateInProgressPerComponent(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "comp", 1)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 2
	pcs.Spec.Template.Clique("router").RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{
		ProgressDeadline: &metav1.Duration{Duration: 2 * time.Second}}
	e.create(pcs)
	tr := e.trackPods(fullStrength("comp", 1, 2, 2))
	sched := e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "comp", 1, 8)
	pcsCondition := func(c *assert.CollectT) metav1.Condition {
		cond := meta.FindStatusCondition(e.pcs(c, "comp").Status.Conditions, apicommon.ConditionUpdateInProgress)
		if cond == nil {
			return metav1.Condition{}
		}
		return *cond
	}
	reasons := func(c *assert.CollectT) (router, group string) {
		if cond := meta.FindStatusCondition(e.pclq(c, "comp-0-router").Status.Conditions, apicommon.ConditionUpdateInProgress); cond != nil {
			router = cond.Reason
		}
		if cond := meta.FindStatusCondition(e.pcsg(c, "comp-0-workers").Status.Conditions, apicommon.ConditionUpdateInProgress); cond != nil {
			group = cond.Reason
		}
		return router, group
	}
	e.eventually(func(c *assert.CollectT) {
		router, group := reasons(c)
		assert.Equal(c, apicommon.ReasonNoActiveUpdate, router)
		assert.Equal(c, apicommon.ReasonNoActiveUpdate, group)
	})

	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	e.eventually(func(c *assert.CollectT) {
		router, group := reasons(c)
		assert.Equal(c, apicommon.ReasonProgressDeadlineExceeded, router)
		assert.Equal(c, apicommon.ReasonProgressing, group)
		cond := meta.FindStatusCondition(e.pclq(c, "comp-0-router").Status.Conditions, apicommon.ConditionUpdateInProgress)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionUnknown, cond.Status)
		}
		set := pcsCondition(c)
		assert.Equal(c, metav1.ConditionUnknown, set.Status)
		assert.Equal(c, apicommon.ReasonProgressDeadlineExceeded, set.Reason)
		assert.Equal(c, "1 of 1 PodCliques being updated passed their progressDeadline (comp-0-router); "+
			"0 of 1 PodCliqueScalingGroups being updated passed their progressDeadline; nothing was rolled back or deleted", set.Message)
	})

	sched.pause(false)
	e.waitUpdated("comp", 1)
	e.eventually(func(c *assert.CollectT) {
		router, group := reasons(c)
		assert.Equal(c, apicommon.ReasonNoActiveUpdate, router)
		assert.Equal(c, apicommon.ReasonNoActiveUpdate, group)
		assert.Equal(c, apicommon.ReasonNoActiveUpdate, pcsCondition(c).Reason)
	})
}

// TestGroupMembersTakeTheNewTemplateAtTheirTurn: under RollingRecreate a scaling group's
// members are written only when their group replica's turn comes, as upstream recreates a
// group replica's PodCliques then. While nothing schedules the first replaced replica's new
// pods (its deadline passes), only that replica's members (the highest index) hold the new
// template; the others keep the one their pods run, and their pods are untouched. Once pods
// schedule again, every member moves.
func TestGroupMembersTakeTheNewTemplateAtTheirTurn(t *testing.T) {
	e := newEnv(t)
	pcs, tr, sched := e.groupOfFourWithDeadline("turn")
	old := map[string]string{}
	for j := range 4 {
		for _, clique := range []string{"prefill", "decode"} {
			name := apicommon.ScalingGroupPodCliqueName("turn-0-workers", j, clique)
			old[name] = e.pclq(t, name).Labels[apicommon.LabelPodTemplateHash]
		}
	}

	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitProgressDeadline("turn-0-workers")
	for name, was := range old {
		now := e.pclq(t, name).Labels[apicommon.LabelPodTemplateHash]
		if strings.HasPrefix(name, "turn-0-workers-3-") {
			assert.NotEqual(t, was, now, "%s: its replica's turn came first (the highest index)", name)
		} else {
			assert.Equal(t, was, now, "%s keeps the template its pods run until its replica's turn", name)
		}
	}
	onlyReplicaDeleted(t, tr, "turn-0-workers", 3, 3)

	sched.pause(false)
	e.waitUpdated("turn", 1)
	for name, was := range old {
		assert.NotEqual(t, was, e.pclq(t, name).Labels[apicommon.LabelPodTemplateHash], "%s holds the new template once the update is done", name)
	}
}

// TestMembersWrittenAheadGoWithinTheBudget: members that already hold the new template when an
// update reaches their group — as an operator that wrote every member at an update's start left
// them, upgraded in the middle of a rollout — have their old pods replaced within the group's
// budget (one replica at a time here, the highest index first), not all at once.
func TestMembersWrittenAheadGoWithinTheBudget(t *testing.T) {
	e := newNamespace(t)
	stop := e.startOperator()
	pcs, tr, sched := e.groupOfFourWithDeadline("ahead")

	stop()
	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	// Written as the scaling-group controller writes a member, from the defaulted PodCliqueSet.
	defaulted := pcs.DeepCopy()
	corev1alpha1.SetDefaultsPodCliqueSet(defaulted)
	hashes := hash.NewTemplates(&defaulted.Spec.Template)
	for j := range 4 {
		for _, clique := range []string{"prefill", "decode"} {
			member := e.pclq(t, apicommon.ScalingGroupPodCliqueName("ahead-0-workers", j, clique))
			e.update(member, func() {
				common.MutatePodClique(member, common.PodCliqueTarget{PCS: defaulted, Replica: 0, Clique: defaulted.Spec.Template.Clique(clique), Hashes: hashes,
					Member: &common.ScalingGroupMember{Name: "ahead-0-workers", Replica: j, MinAvailable: 1}})
			})
		}
	}

	e.startOperator()
	e.waitProgressDeadline("ahead-0-workers")
	onlyReplicaDeleted(t, tr, "ahead-0-workers", 3, 3)

	sched.pause(false)
	e.waitUpdated("ahead", 1)
}

// waitProgressDeadline waits until the scaling group's update reports ProgressDeadlineExceeded.
func (e *env) waitProgressDeadline(pcsg string) {
	e.t.Helper()
	e.eventually(func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(e.pcsg(c, pcsg).Status.Conditions, apicommon.ConditionUpdateInProgress)
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonProgressDeadlineExceeded, cond.Reason)
		}
	})
}

// onlyReplicaDeleted asserts that the tracker saw exactly pods deletions of the scaling group's
// pods, all of group replica index.
func onlyReplicaDeleted(t *testing.T, tr *podTracker, group string, index, pods int) {
	t.Helper()
	deletions, _, _, _ := tr.snapshot()
	n := 0
	for _, d := range deletions {
		if d.group == group {
			assert.Equal(t, index, d.groupIndex, "%s: only group replica %d loses pods", d.pod, index)
			n++
		}
	}
	assert.Equal(t, pods, n, "pods of %s deleted", group)
}

// groupOfFourWithDeadline runs the disaggregated PodCliqueSet name with 4 scaling-group
// replicas whose updates have a progressDeadline of 2 s, every pod ready and tracked.
func (e *env) groupOfFourWithDeadline(name string) (*corev1alpha1.PodCliqueSet, *podTracker, *scheduler) {
	e.t.Helper()
	pcs := disaggregated(e.ns, name, 1)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{
		ProgressDeadline: &metav1.Duration{Duration: 2 * time.Second}}
	e.create(pcs)
	tr := e.trackPods(fullStrength(name, 1, 4, 1))
	sched := e.startScheduler(e.kwokNode())
	e.waitRunning(tr, name, 1, 13)
	return pcs, tr, sched
}
