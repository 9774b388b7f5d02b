package controller_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// scheduler binds every ungated pod of the namespace to a kwok node (where it becomes Running
// and Ready) until paused or the test ends: the tests' stand-in for grove-scheduler.
type scheduler struct {
	mu     sync.Mutex
	paused bool
}

func (e *env) startScheduler(node string) *scheduler {
	s := &scheduler{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			s.mu.Lock()
			paused := s.paused
			s.mu.Unlock()
			list := &corev1.PodList{}
			if !paused && e.c.List(ctx, list, client.InNamespace(e.ns)) == nil {
				for _, p := range list.Items {
					if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !gated(&p) {
						b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
							Target: corev1.ObjectReference{Kind: "Node", Name: node}}
						_ = e.c.SubResource("binding").Create(ctx, &p, b)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *scheduler) pause(p bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = p
}

// trackedPod is what the tracker knows of a pod.
type trackedPod struct {
	name, clique, group string
	replica, groupIndex int
	ready, terminating  bool
}

// deletion is a pod whose deletion the tracker saw start.
type deletion struct {
	pod, clique, group  string
	replica, groupIndex int
	wasReady            bool
}

// podTracker watches the namespace's pods and checks, on every change, how far below their
// full strength the gangs are: per standalone clique the pods missing from ready (not
// terminating) ones, per scaling group the replicas with a member short of its pods, and the
// PodCliqueSet replicas that are short anywhere.
type podTracker struct {
	mu        sync.Mutex
	cliques   map[string]cliqueInfo
	pods      map[types.UID]*trackedPod
	deletions []deletion
	// maxShortPods per standalone PodClique; maxShortGroupReplicas per scaling group;
	// maxShortReplicas of the PodCliqueSet.
	maxShortPods          map[string]int
	maxShortGroupReplicas map[string]int
	maxShortReplicas      int
	// shortNow is the number of PodCliqueSet replicas short as of the last event.
	shortNow int
}

// cliqueInfo is a PodClique at full strength and where it sits.
type cliqueInfo struct {
	pods, replica int
	group         string
	groupIndex    int
}

func (e *env) trackPods(cliques map[string]cliqueInfo) *podTracker {
	e.t.Helper()
	events, stop := e.watchAll(&corev1.PodList{})
	tr := &podTracker{cliques: cliques, pods: map[types.UID]*trackedPod{},
		maxShortPods: map[string]int{}, maxShortGroupReplicas: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				tr.observe(ev.Type, p)
			}
		}
	}()
	e.t.Cleanup(func() { stop(); <-done })
	return tr
}

func (tr *podTracker) observe(t watch.EventType, p *corev1.Pod) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if t == watch.Deleted {
		delete(tr.pods, p.UID)
	} else {
		tp := tr.pods[p.UID]
		if tp == nil {
			tp = &trackedPod{name: p.Name, clique: p.Labels[apicommon.LabelPodClique], group: p.Labels[apicommon.LabelPodCliqueScalingGroup]}
			// A pod outside a scaling group has no group index: its zero value is right.
			_, _ = fmt.Sscan(p.Labels[apicommon.LabelPodCliqueSetReplicaIndex], &tp.replica)
			_, _ = fmt.Sscan(p.Labels[apicommon.LabelPodCliqueScalingGroupReplicaIndex], &tp.groupIndex)
			tr.pods[p.UID] = tp
		}
		if p.DeletionTimestamp != nil && !tp.terminating {
			tr.deletions = append(tr.deletions, deletion{pod: p.Name, clique: tp.clique, group: tp.group,
				replica: tp.replica, groupIndex: tp.groupIndex, wasReady: tp.ready})
		}
		tp.terminating = p.DeletionTimestamp != nil
		tp.ready = isReady(p)
	}
	// How short is each PodClique of ready, not terminating pods?
	ready := map[string]int{}
	for _, tp := range tr.pods {
		if tp.ready && !tp.terminating {
			ready[tp.clique]++
		}
	}
	shortReplicas := map[int]bool{}
	shortGroupReplicas := map[string]map[int]bool{}
	for clique, info := range tr.cliques {
		short := info.pods - ready[clique]
		if short <= 0 {
			continue
		}
		shortReplicas[info.replica] = true
		if info.group == "" {
			tr.maxShortPods[clique] = max(tr.maxShortPods[clique], short)
			continue
		}
		if shortGroupReplicas[info.group] == nil {
			shortGroupReplicas[info.group] = map[int]bool{}
		}
		shortGroupReplicas[info.group][info.groupIndex] = true
	}
	for g, js := range shortGroupReplicas {
		tr.maxShortGroupReplicas[g] = max(tr.maxShortGroupReplicas[g], len(js))
	}
	tr.maxShortReplicas = max(tr.maxShortReplicas, len(shortReplicas))
	tr.shortNow = len(shortReplicas)
}

// atFullStrength says whether, as the watch has seen it so far, every PodClique has all its
// pods ready: the baseline a measurement must start from (an available replica may still
// have pods above minAvailable coming up).
func (tr *podTracker) atFullStrength() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.pods) > 0 && tr.shortNow == 0
}

// reset forgets what was measured so far (the gangs have come up; the update starts now).
func (tr *podTracker) reset() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.deletions = nil
	tr.maxShortPods, tr.maxShortGroupReplicas, tr.maxShortReplicas = map[string]int{}, map[string]int{}, 0
}

func (tr *podTracker) snapshot() ([]deletion, map[string]int, map[string]int, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.deletions), tr.maxShortPods, tr.maxShortGroupReplicas, tr.maxShortReplicas
}

func (e *env) pcs(t require.TestingT, name string) *corev1alpha1.PodCliqueSet {
	pcs := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pcs))
	return pcs
}

func (e *env) podsOf(t require.TestingT) []corev1.Pod {
	list := &corev1.PodList{}
	require.NoError(t, e.c.List(e.ctx, list, client.InNamespace(e.ns)))
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// fullStrength describes every PodClique of the disaggregated PodCliqueSet at full strength.
func fullStrength(pcs string, replicas, groupReplicas, routers int) map[string]cliqueInfo {
	out := map[string]cliqueInfo{}
	for i := range replicas {
		out[fmt.Sprintf("%s-%d-router", pcs, i)] = cliqueInfo{pods: routers, replica: i}
		group := fmt.Sprintf("%s-%d-workers", pcs, i)
		for j := range groupReplicas {
			out[fmt.Sprintf("%s-%d-prefill", group, j)] = cliqueInfo{pods: 2, replica: i, group: group, groupIndex: j}
			out[fmt.Sprintf("%s-%d-decode", group, j)] = cliqueInfo{pods: 1, replica: i, group: group, groupIndex: j}
		}
	}
	return out
}

// relabel changes a label of every clique: a new pod template (and generation hash) for all.
func relabel(pcs *corev1alpha1.PodCliqueSet, version string) {
	for _, c := range pcs.Spec.Template.Cliques {
		c.Labels = map[string]string{"version": version}
	}
}

// waitUpdated waits until the PodCliqueSet reports the update done: every replica updated,
// updateEndedAt set, and every pod built from its PodClique's template.
func (e *env) waitUpdated(name string, replicas int32) *corev1alpha1.PodCliqueSet {
	e.t.Helper()
	var pcs *corev1alpha1.PodCliqueSet
	e.eventually(func(c *assert.CollectT) {
		pcs = e.pcs(c, name)
		assert.Equal(c, replicas, pcs.Status.UpdatedReplicas)
		if assert.NotNil(c, pcs.Status.UpdateProgress) {
			assert.NotNil(c, pcs.Status.UpdateProgress.UpdateEndedAt)
			assert.Nil(c, pcs.Status.UpdateProgress.CurrentlyUpdating)
		}
		for _, p := range e.podsOf(c) {
			assert.Equal(c, e.pclq(c, p.Labels[apicommon.LabelPodClique]).Labels[apicommon.LabelPodTemplateHash],
				p.Labels[apicommon.LabelPodTemplateHash], "%s is built from the current template", p.Name)
			assert.True(c, isReady(&p), "%s ready", p.Name)
		}
	})
	return pcs
}

// TestRollingRecreate changes the template of every clique of a running PodCliqueSet with two
// replicas. The update takes one replica at a time (0, then 1); inside it the router (3 pods,
// minAvailable 2) loses at most one ready pod at a time, highest index first, and the scaling
// group recreates one replica at a time (the scaled one first) and always keeps one available.
// The status counts updated replicas up and reports start, end and the replica being updated.
func TestRollingRecreate(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "roll", 2)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 3
	pcs.Spec.Template.Clique("router").Spec.MinAvailable = ptr.To[int32](2)
	e.create(pcs)
	tr := e.trackPods(fullStrength("roll", 2, 2, 3))
	e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		got := e.pcs(c, "roll")
		assert.EqualValues(c, 2, got.Status.AvailableReplicas)
		assert.EqualValues(c, 2, got.Status.UpdatedReplicas)
		assert.Len(c, e.podsOf(c), 18)
	})
	before := map[types.UID]bool{}
	for _, p := range e.podsOf(t) {
		before[p.UID] = true
	}
	oldRouters := e.pods("roll-0-router")

	// Follow the PodCliqueSet's status while it updates.
	var progressMu sync.Mutex
	var updatedSeen []int32
	var updatingSeen []int32
	stop := make(chan struct{})
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		for {
			pcs := &corev1alpha1.PodCliqueSet{}
			if e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "roll"}, pcs) == nil {
				progressMu.Lock()
				if n := len(updatedSeen); n == 0 || updatedSeen[n-1] != pcs.Status.UpdatedReplicas {
					updatedSeen = append(updatedSeen, pcs.Status.UpdatedReplicas)
				}
				if p := pcs.Status.UpdateProgress; p != nil && len(p.CurrentlyUpdating) > 0 {
					if n := len(updatingSeen); n == 0 || updatingSeen[n-1] != p.CurrentlyUpdating[0].ReplicaIndex {
						updatingSeen = append(updatingSeen, p.CurrentlyUpdating[0].ReplicaIndex)
					}
				}
				progressMu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	e.eventually(func(c *assert.CollectT) {
		assert.True(c, tr.atFullStrength(), "every pod ready before the update starts")
	})
	tr.reset()
	changedAt := metav1.Now().Rfc3339Copy()
	e.update(pcs, func() { relabel(pcs, "v2") })
	done := e.waitUpdated("roll", 2)
	close(stop)
	<-followed

	for _, p := range e.podsOf(t) {
		assert.False(t, before[p.UID], "%s was recreated", p.Name)
		assert.Equal(t, "v2", p.Labels["version"])
	}
	assert.Len(t, e.podsOf(t), 18)

	deletions, shortPods, shortGroupReplicas, shortReplicas := tr.snapshot()
	require.Len(t, deletions, 18, "each pod deleted once")
	assert.Equal(t, 1, shortReplicas, "one PodCliqueSet replica short at a time")
	assert.Equal(t, map[string]int{"roll-0-router": 1, "roll-1-router": 1}, shortPods, "one router pod at a time, never below minAvailable")
	assert.Equal(t, map[string]int{"roll-0-workers": 1, "roll-1-workers": 1}, shortGroupReplicas, "one group replica at a time")
	var order []string
	for _, d := range deletions {
		assert.True(t, d.wasReady, "%s was ready: nothing is deleted before the previous step is back", d.pod)
		step := fmt.Sprintf("%d/router", d.replica)
		if d.group != "" {
			step = fmt.Sprintf("%d/workers-%d", d.replica, d.groupIndex)
		}
		if len(order) == 0 || order[len(order)-1] != step {
			order = append(order, step)
		}
	}
	// Within a replica the router and the group update side by side; across replicas, in turn.
	var replicaOrder []string
	for _, s := range order {
		if r := s[:1]; len(replicaOrder) == 0 || replicaOrder[len(replicaOrder)-1] != r {
			replicaOrder = append(replicaOrder, r)
		}
	}
	assert.Equal(t, []string{"0", "1"}, replicaOrder, "replica 0, then replica 1: %v", order)
	var groupOrder []string
	for _, s := range order {
		if s[2:] != "router" && (len(groupOrder) == 0 || groupOrder[len(groupOrder)-1] != s) {
			groupOrder = append(groupOrder, s)
		}
	}
	assert.Equal(t, []string{"0/workers-1", "0/workers-0", "1/workers-1", "1/workers-0"}, groupOrder, "the scaled group replica first")
	var routerOrder []string
	for _, d := range deletions {
		if d.clique == "roll-0-router" {
			routerOrder = append(routerOrder, d.pod)
		}
	}
	assert.Equal(t, []string{oldRouters[2].Name, oldRouters[1].Name, oldRouters[0].Name}, routerOrder, "highest index first")

	progressMu.Lock()
	assert.Equal(t, []int32{0, 1}, updatingSeen, "replica being updated")
	assert.Equal(t, []int32{2, 0, 1, 2}, updatedSeen[len(updatedSeen)-4:], "updated replicas count up")
	progressMu.Unlock()
	p := done.Status.UpdateProgress
	assert.False(t, p.UpdateStartedAt.Before(&changedAt), "started with the change")
	assert.False(t, p.UpdateEndedAt.Before(&p.UpdateStartedAt))
	assert.Equal(t, []string{"roll-0-router", "roll-1-router"}, p.UpdatedPodCliques)
	assert.Equal(t, []string{"roll-0-workers", "roll-1-workers"}, p.UpdatedPodCliqueScalingGroups)
	// Upstream's counts: 2 replicas x 1 standalone clique, 2 replicas x 1 scaling group.
	assert.Equal(t, [4]int32{2, 2, 2, 2}, [4]int32{p.UpdatedPodCliquesCount, p.TotalPodCliquesCount,
		p.UpdatedPodCliqueScalingGroupsCount, p.TotalPodCliqueScalingGroupsCount})
	group := e.pcsg(t, "roll-1-workers")
	if assert.NotNil(t, group.Status.UpdateProgress) && assert.NotNil(t, group.Status.UpdateProgress.ReadyReplicaIndicesSelectedToUpdate) {
		assert.Equal(t, []int32{1, 0}, group.Status.UpdateProgress.ReadyReplicaIndicesSelectedToUpdate.Completed)
		assert.NotNil(t, group.Status.UpdateProgress.UpdateEndedAt)
		assert.Equal(t, group.Spec.Replicas*int32(len(group.Spec.CliqueNames)), group.Status.UpdateProgress.TotalPodCliquesCount)
		assert.Equal(t, group.Status.UpdateProgress.TotalPodCliquesCount, group.Status.UpdateProgress.UpdatedPodCliquesCount)
	}
}

// TestOnDelete: with updateStrategy OnDelete a template change replaces nothing; a pod deleted
// by hand comes back from the new template, and a scale-in removes an outdated pod first.
func TestOnDelete(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "ondel", 1)
	pcs.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.OnDeleteStrategy}
	pcs.Spec.Template.Clique("router").Spec.Replicas = 3
	pcs.Spec.Template.Clique("router").Spec.MinAvailable = ptr.To[int32](1)
	e.create(pcs)
	e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		assert.EqualValues(c, 1, e.pcs(c, "ondel").Status.AvailableReplicas)
		assert.Len(c, e.podsOf(c), 9)
		for _, p := range e.podsOf(c) {
			assert.True(c, isReady(&p))
		}
	})
	before := e.podUIDs(t, "ondel-")

	e.update(pcs, func() { relabel(pcs, "v2") })
	// Every PodClique has taken the new template (and its controller has acted on it).
	e.eventually(func(c *assert.CollectT) {
		for clique := range fullStrength("ondel", 1, 2, 3) {
			p := e.pclq(c, clique)
			assert.Equal(c, "v2", p.Labels["version"])
			assert.Equal(c, p.Generation, ptr.Deref(p.Status.ObservedGeneration, 0), clique)
			assert.Zero(c, p.Status.UpdatedReplicas, "%s: no pod built from the new template", clique)
		}
		got := e.pcs(c, "ondel")
		if assert.NotNil(c, got.Status.UpdateProgress) {
			// As upstream: the operator replaces nothing, so the update has ended once the new
			// template is accepted (Dynamo waits for updateEndedAt).
			assert.NotNil(c, got.Status.UpdateProgress.UpdateEndedAt, "an OnDelete update ends at once")
			assert.Nil(c, got.Status.UpdateProgress.CurrentlyUpdating, "OnDelete picks no replica")
		}
		assert.Zero(c, got.Status.UpdatedReplicas)
		group := e.pcsg(c, "ondel-0-workers")
		if assert.NotNil(c, group.Status.UpdateProgress) {
			assert.NotNil(c, group.Status.UpdateProgress.UpdateEndedAt, "the scaling group's update ends at once too")
		}
	})
	assert.Equal(t, keys(before), keys(e.podUIDs(t, "ondel-")), "nothing was replaced")

	routers := e.pods("ondel-0-router")
	e.deletePod(routers[1].Name)
	e.eventually(func(c *assert.CollectT) {
		var hashes []string
		for _, p := range e.pods("ondel-0-router") {
			assert.True(c, isReady(&p))
			hashes = append(hashes, p.Labels["version"])
		}
		sort.Strings(hashes)
		assert.Equal(c, []string{"", "", "v2"}, hashes, "the replacement is built from the new template")
	})
	after := e.podUIDs(t, "ondel-")
	delete(before, routers[1].UID)
	for uid := range before {
		assert.Contains(t, after, uid, "only the deleted pod was replaced")
	}

	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "ondel-0-router"}}, 2)
	e.eventually(func(c *assert.CollectT) {
		var versions []string
		for _, p := range e.pods("ondel-0-router") {
			versions = append(versions, p.Labels["version"])
		}
		sort.Strings(versions)
		assert.Equal(c, []string{"", "v2"}, versions, "scale-in removed an outdated pod, not the updated one")
	})
}

// TestRollingUpdateWithScalingAndASecondChange holds an update of replica 0 half way (nothing
// schedules the replacement), scales during it, changes the template again, then lets it
// finish: pods added by scaling are built from the newest template, the second change carries
// on with replica 0 instead of starting over, replica 1 is left alone until replica 0 is done,
// and the update ends with every pod on the newest template.
func TestRollingUpdateWithScalingAndASecondChange(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "scale", 2)
	e.create(pcs)
	sched := e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		assert.EqualValues(c, 2, e.pcs(c, "scale").Status.AvailableReplicas)
		assert.Len(c, e.podsOf(c), 14)
		for _, p := range e.podsOf(c) {
			assert.True(c, isReady(&p))
		}
	})
	replica1 := e.podUIDs(t, "scale-1-")

	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	// Replica 0's router (1 pod, minAvailable 1) has been replaced; the replacement waits.
	var firstStart metav1.Time
	e.eventually(func(c *assert.CollectT) {
		got := e.pcs(c, "scale")
		if assert.NotNil(c, got.Status.UpdateProgress) && assert.Len(c, got.Status.UpdateProgress.CurrentlyUpdating, 1) {
			assert.EqualValues(c, 0, got.Status.UpdateProgress.CurrentlyUpdating[0].ReplicaIndex)
			firstStart = got.Status.UpdateProgress.UpdateStartedAt
		}
		routers := e.pods("scale-0-router")
		if assert.Len(c, routers, 1) {
			assert.Equal(c, "v2", routers[0].Labels["version"])
			assert.False(c, isReady(&routers[0]))
		}
	})

	// Scale out during the update: the new pods and group replicas use the new template.
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "scale-1-router"}}, 2)
	e.scale(&corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "scale-1-workers"}}, 3)
	e.eventually(func(c *assert.CollectT) {
		var versions []string
		for _, p := range e.pods("scale-1-router") {
			versions = append(versions, p.Labels["version"])
		}
		sort.Strings(versions)
		assert.Equal(c, []string{"", "v2"}, versions, "the added router pod is new; the old one waits for its replica's turn")
		for _, p := range append(e.pods("scale-1-workers-2-prefill"), e.pods("scale-1-workers-2-decode")...) {
			assert.Equal(c, "v2", p.Labels["version"])
		}
		assert.Len(c, e.pods("scale-1-workers-2-prefill"), 2)
	})
	// Scale in: the PodClique gives up the added (updated, unscheduled) pod first.
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "scale-1-router"}}, 1)
	e.eventually(func(c *assert.CollectT) {
		routers := e.pods("scale-1-router")
		if assert.Len(c, routers, 1) {
			assert.Contains(c, replica1, routers[0].UID, "the running outdated pod stays while its replica waits")
		}
	})

	// A second change while replica 0 is half way: the update restarts from where it is.
	e.update(pcs, func() { relabel(pcs, "v3") })
	e.eventually(func(c *assert.CollectT) {
		got := e.pcs(c, "scale")
		if assert.NotNil(c, got.Status.UpdateProgress) && assert.Len(c, got.Status.UpdateProgress.CurrentlyUpdating, 1) {
			assert.EqualValues(c, 0, got.Status.UpdateProgress.CurrentlyUpdating[0].ReplicaIndex, "still replica 0")
			assert.False(c, got.Status.UpdateProgress.UpdateStartedAt.Before(&firstStart), "a new update started")
			assert.Nil(c, got.Status.UpdateProgress.UpdateEndedAt)
		}
		routers := e.pods("scale-0-router")
		if assert.Len(c, routers, 1) {
			assert.Equal(c, "v3", routers[0].Labels["version"], "the not-ready v2 replacement was replaced at once")
		}
	})
	for uid := range replica1 {
		if _, ok := e.podUIDs(t, "scale-1-")[uid]; !ok {
			t.Errorf("replica 1 lost pod %s before replica 0 was done", uid)
		}
	}

	sched.pause(false)
	e.waitUpdated("scale", 2)
	for _, p := range e.podsOf(t) {
		assert.Equal(t, "v3", p.Labels["version"], p.Name)
	}
	assert.Len(t, e.pods("scale-1-workers-2-prefill"), 2, "the scaled-out group replica is kept")
}

// TestAReplacedPodKeepsItsIndex: a rolling update replaces a pod while the old one is still
// terminating (held here by a finalizer, as a pod with a long grace period is): the
// replacement takes the old pod's index and so its hostname, and every clique ends with
// exactly the indices 0..replicas-1, as upstream (Dynamo derives ranks from
// GROVE_PCLQ_POD_INDEX and addresses peers by hostname).
func TestAReplacedPodKeepsItsIndex(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "idx", 1)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 2
	pcs.Spec.Template.Clique("router").Spec.MinAvailable = ptr.To[int32](1)
	e.create(pcs)
	e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		assert.EqualValues(c, 1, e.pcs(c, "idx").Status.AvailableReplicas)
		pods := e.pods("idx-0-router")
		assert.Len(c, pods, 2)
		for _, p := range pods {
			assert.True(c, isReady(&p))
		}
	})
	const hold = "test.grove.io/hold"
	held := e.pods("idx-0-router")
	for i := range held {
		p := &held[i]
		patch := client.MergeFrom(p.DeepCopy())
		p.Finalizers = append(p.Finalizers, hold)
		require.NoError(t, e.c.Patch(e.ctx, p, patch))
	}
	t.Cleanup(func() {
		for i := range held {
			p := &corev1.Pod{}
			if e.c.Get(context.Background(), client.ObjectKeyFromObject(&held[i]), p) == nil {
				patch := client.MergeFrom(p.DeepCopy())
				p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == hold })
				_ = e.c.Patch(context.Background(), p, patch)
			}
		}
	})

	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitUpdated("idx", 1)
	for clique, replicas := range map[string]int{"idx-0-router": 2, "idx-0-workers-0-prefill": 2, "idx-0-workers-0-decode": 1, "idx-0-workers-1-prefill": 2, "idx-0-workers-1-decode": 1} {
		var hostnames, want []string
		for _, p := range e.pods(clique) {
			hostnames = append(hostnames, p.Spec.Hostname)
		}
		for i := range replicas {
			want = append(want, apicommon.PodHostname(clique, i))
		}
		assert.Equal(t, want, hostnames, "%s: the replacements took the indices of the pods they replaced", clique)
	}
	for i := range held {
		p := &corev1.Pod{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(&held[i]), p))
		assert.NotNil(t, p.DeletionTimestamp, "%s: the old pod was still terminating while its index was reused", p.Name)
	}
}
