package controller_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// runAll plays the scheduler on a kwok node: it binds every ungated pod of the namespace (the
// pods of scaled gangs are ungated once the base gang is bound) until all are Ready.
func (e *env) runAll(node string) {
	e.t.Helper()
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("")
		// Every pod the templates call for exists: pods still to be created are not ready yet.
		assert.Len(c, pods, e.templatePods(c))
		for _, p := range pods {
			if p.Spec.NodeName == "" && !gated(&p) {
				b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				_ = e.c.SubResource("binding").Create(e.ctx, &p, b)
			}
			assert.True(c, isReady(&p), "%s ready", p.Name)
		}
	}, "every pod runs")
}

// templatePods is the number of pods the namespace's PodCliqueSets' templates call for.
func (e *env) templatePods(c *assert.CollectT) int {
	list := &corev1alpha1.PodCliqueSetList{}
	if !assert.NoError(c, e.c.List(e.ctx, list, client.InNamespace(e.ns))) {
		return -1
	}
	n := 0
	for _, pcs := range list.Items {
		t := &pcs.Spec.Template
		perReplica := 0
		for _, clq := range t.StandaloneCliques() {
			perReplica += int(clq.Spec.Replicas)
		}
		for i := range t.PodCliqueScalingGroupConfigs {
			g := &t.PodCliqueScalingGroupConfigs[i]
			for _, name := range g.CliqueNames {
				if clq := t.Clique(name); clq != nil {
					perReplica += int(corev1alpha1.ScalingGroupReplicas(g)) * int(clq.Spec.Replicas)
				}
			}
		}
		n += int(pcs.Spec.Replicas) * perReplica
	}
	return n
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podUIDs are the UIDs of the live pods whose PodClique name starts with prefix.
func (e *env) podUIDs(t require.TestingT, prefix string) map[types.UID]string {
	list := &corev1.PodList{}
	require.NoError(t, e.c.List(e.ctx, list, client.InNamespace(e.ns)))
	out := map[types.UID]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && strings.HasPrefix(p.Labels[apicommon.LabelPodClique], prefix) {
			out[p.UID] = p.Name
		}
	}
	return out
}

// keys returns the sorted UIDs of a set.
func keys(m map[types.UID]string) []string {
	out := make([]string, 0, len(m))
	for uid := range m {
		out = append(out, string(uid))
	}
	sort.Strings(out)
	return out
}

// disjoint reports whether no UID of a is in b.
func disjoint(a, b map[types.UID]string) bool {
	for uid := range a {
		if _, ok := b[uid]; ok {
			return false
		}
	}
	return true
}

func (e *env) pclq(t require.TestingT, name string) *corev1alpha1.PodClique {
	p := &corev1alpha1.PodClique{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, p))
	return p
}

func (e *env) pcsg(t require.TestingT, name string) *corev1alpha1.PodCliqueScalingGroup {
	g := &corev1alpha1.PodCliqueScalingGroup{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, g))
	return g
}

// breached reports whether the PodClique's MinAvailableBreached condition is True.
func (e *env) breached(t require.TestingT, name string) bool {
	c := condition(e.pclq(t, name).Status.Conditions, apicommon.ConditionMinAvailableBreached)
	return c != nil && c.Status == metav1.ConditionTrue
}

func (e *env) deletePod(name string) {
	e.t.Helper()
	require.NoError(e.t, e.c.Delete(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}))
}

// gangTerminationPCS is the disaggregated PodCliqueSet with a short terminationDelay.
func gangTerminationPCS(ns, name string, replicas int32, delay time.Duration) *corev1alpha1.PodCliqueSet {
	pcs := disaggregated(ns, name, replicas)
	pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: delay}
	return pcs
}

// waitRecreated waits until the scaling group reports the end of a gang recreation (the
// reason only a recreation that was in progress leads to).
func (e *env) waitRecreated(pcsg string) {
	e.t.Helper()
	e.eventually(func(c *assert.CollectT) {
		cond := condition(e.pcsg(c, pcsg).Status.Conditions, apicommon.ConditionGangTerminationInProgress)
		if assert.NotNil(c, cond, "%s GangTerminationInProgress", pcsg) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonPodCliqueSetReplicaRecreated, cond.Reason)
		}
	})
	// The recreation went through the scaling group's own controller: it alone wrote the
	// group's status, as the apiserver's managedFields record.
	assert.Equal(e.t, []string{apicommon.ScalingGroupFieldManager}, statusManagers(e.pcsg(e.t, pcsg)), "writers of %s's status", pcsg)
}

// TestGangTerminationStandaloneClique: a pod of a standalone clique is deleted and its
// replacement cannot be scheduled: after terminationDelay every PodClique (and so every pod)
// of that PodCliqueSet replica is recreated, once, while the other replica keeps its pods.
func TestGangTerminationStandaloneClique(t *testing.T) {
	e := newEnv(t)
	e.create(gangTerminationPCS(e.ns, "gts", 2, time.Second))
	e.runAll(e.kwokNode())
	replica0, replica1 := e.podUIDs(t, "gts-0-"), e.podUIDs(t, "gts-1-")
	require.Len(t, replica0, 7)
	gangs := map[string]types.UID{}
	for _, name := range []string{"gts-0", "gts-0-workers-0"} {
		gangs[name] = e.podGang(t, name).UID
	}

	router := e.pods("gts-0-router")[0]
	e.deletePod(router.Name)
	// The replacement stays unscheduled: nothing binds it.
	e.waitRecreated("gts-0-workers")
	e.eventually(func(c *assert.CollectT) {
		now := e.podUIDs(c, "gts-0-")
		assert.Len(c, now, 7, "replica 0 has all its pods again")
		assert.True(c, disjoint(replica0, now), "every pod of replica 0 was recreated")
		for name, uid := range gangs {
			assert.NotEqual(c, uid, e.podGang(c, name).UID, "PodGang %s was recreated", name)
		}
	})
	assert.Equal(t, keys(replica1), keys(e.podUIDs(t, "gts-1-")), "replica 1 keeps exactly its pods")
	for _, p := range e.pods("") {
		if strings.HasPrefix(p.Name, "gts-1-") {
			assert.True(t, isReady(&p), "%s still running", p.Name)
		}
	}
	assert.Nil(t, condition(e.pcsg(t, "gts-1-workers").Status.Conditions, apicommon.ConditionGangTerminationInProgress))
	// Recreated PodCliques are unplaced, so the breach that caused the recreation is gone.
	assert.False(t, e.breached(t, "gts-0-router"))
	assert.Equal(t, 1, e.eventCount("GangTerminated"), "one recreation for one breach")
}

func (e *env) eventCount(reason string) int {
	e.t.Helper()
	events := &corev1.EventList{}
	require.NoError(e.t, e.c.List(e.ctx, events, client.InNamespace(e.ns)))
	n := 0
	for _, ev := range events.Items {
		if ev.Reason == reason {
			n += int(max(ev.Count, 1))
		}
	}
	return n
}

// TestGangTerminationScalingGroupReplicaWithSpare: a pod of scaling-group replica 1 fails and
// its replacement cannot be scheduled; the group keeps minAvailable (1) available replicas, so
// only group replica 1 (its PodCliques, pods and scaled PodGang) is recreated.
func TestGangTerminationScalingGroupReplicaWithSpare(t *testing.T) {
	e := newEnv(t)
	e.create(gangTerminationPCS(e.ns, "spare", 1, time.Second))
	e.runAll(e.kwokNode())
	groupReplica1 := e.podUIDs(t, "spare-0-workers-1-")
	rest := map[types.UID]string{}
	for _, prefix := range []string{"spare-0-router", "spare-0-workers-0-"} {
		for uid, n := range e.podUIDs(t, prefix) {
			rest[uid] = n
		}
	}
	require.Len(t, groupReplica1, 3)
	require.Len(t, rest, 4)
	scaledGang := e.podGang(t, "spare-0-workers-0").UID

	failed := e.pods("spare-0-workers-1-prefill")[0]
	// kwok writes this pod's status too: re-read on conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(&failed), &failed); err != nil {
			return err
		}
		failed.Status.Phase = corev1.PodFailed
		return e.c.Status().Update(e.ctx, &failed)
	}))
	e.eventually(func(c *assert.CollectT) {
		now := e.podUIDs(c, "spare-0-workers-1-")
		assert.Len(c, now, 3)
		assert.True(c, disjoint(groupReplica1, now), "every pod of group replica 1 was recreated")
		assert.NotEqual(c, scaledGang, e.podGang(c, "spare-0-workers-0").UID, "its scaled PodGang too")
	})
	stillThere := map[types.UID]string{}
	for _, prefix := range []string{"spare-0-router", "spare-0-workers-0-"} {
		for uid, n := range e.podUIDs(t, prefix) {
			stillThere[uid] = n
		}
	}
	assert.Equal(t, keys(rest), keys(stillThere), "the router and group replica 0 keep exactly their pods")
	assert.Nil(t, condition(e.pcsg(t, "spare-0-workers").Status.Conditions, apicommon.ConditionGangTerminationInProgress),
		"the PodCliqueSet replica was not recreated")
	assert.Equal(t, 1, e.eventCount("ScalingGroupReplicaRecreated"))
	assert.Zero(t, e.eventCount("GangTerminated"))
}

// TestGangTerminationScalingGroupReplicaWithoutSpare: with minAvailable 2 of 2 group replicas,
// a lost pod in group replica 1 leaves the group below its minimum: the whole PodCliqueSet
// replica is recreated.
func TestGangTerminationScalingGroupReplicaWithoutSpare(t *testing.T) {
	e := newEnv(t)
	pcs := gangTerminationPCS(e.ns, "nospare", 1, time.Second)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](2)
	e.create(pcs)
	e.runAll(e.kwokNode())
	before := e.podUIDs(t, "nospare-0-")
	require.Len(t, before, 7)

	e.deletePod(e.pods("nospare-0-workers-1-decode")[0].Name)
	e.waitRecreated("nospare-0-workers")
	e.eventually(func(c *assert.CollectT) {
		now := e.podUIDs(c, "nospare-0-")
		assert.Len(c, now, 7)
		assert.True(c, disjoint(before, now), "every pod of the replica was recreated")
	})
	assert.Equal(t, 1, e.eventCount("GangTerminated"))
	assert.Zero(t, e.eventCount("ScalingGroupReplicaRecreated"))
}

// TestGangBreachHealedWithinDelay: replica 0 loses a pod and gets it back (its replacement is
// scheduled and becomes Ready) before terminationDelay; replica 1 loses one a moment later for
// good. Replica 1's recreation, which comes after replica 0's delay has run out too, proves the
// controller judged replica 0 after its delay: replica 0 keeps exactly its pods.
func TestGangBreachHealedWithinDelay(t *testing.T) {
	e := newEnv(t)
	e.create(gangTerminationPCS(e.ns, "heal", 2, 6*time.Second))
	node := e.kwokNode()
	e.runAll(node)

	e.deletePod(e.pods("heal-0-router")[0].Name)
	var replacement corev1.Pod
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.breached(c, "heal-0-router"), "replica 0 breached")
		pods := e.pods("heal-0-router")
		if assert.Len(c, pods, 1) {
			replacement = pods[0]
			assert.False(c, gated(&replacement))
		}
	})
	e.deletePod(e.pods("heal-1-router")[0].Name)
	e.bind(&replacement, node)
	e.eventually(func(c *assert.CollectT) {
		assert.False(c, e.breached(c, "heal-0-router"), "replica 0 healed")
	})
	healed := e.podUIDs(t, "heal-0-")
	require.Len(t, healed, 7)
	healedAt := condition(e.pclq(t, "heal-0-router").Status.Conditions, apicommon.ConditionMinAvailableBreached).LastTransitionTime

	e.waitRecreated("heal-1-workers")
	assert.Equal(t, keys(healed), keys(e.podUIDs(t, "heal-0-")), "replica 0 keeps exactly its pods")
	assert.Nil(t, condition(e.pcsg(t, "heal-0-workers").Status.Conditions, apicommon.ConditionGangTerminationInProgress))
	assert.Equal(t, healedAt, condition(e.pclq(t, "heal-0-router").Status.Conditions, apicommon.ConditionMinAvailableBreached).LastTransitionTime,
		"replica 0 has not been breached again")
	assert.Equal(t, 1, e.eventCount("GangTerminated"), "only replica 1")
}

// TestNoGangTerminationDuringRollingUpdate: a rolling update of replica 0 is held half way (its
// replacement router cannot be scheduled), so its router stays below minAvailable past
// terminationDelay; replica 1, not being updated, loses its router a moment later. Replica 1's
// recreation proves the delay has run out for replica 0 too, which keeps every pod: an update
// takes pods down on purpose and is never mistaken for a broken gang.
func TestNoGangTerminationDuringRollingUpdate(t *testing.T) {
	e := newEnv(t)
	pcs := gangTerminationPCS(e.ns, "upd", 2, time.Second)
	e.create(pcs)
	sched := e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		assert.EqualValues(c, 2, e.pcs(c, "upd").Status.AvailableReplicas)
		assert.Len(c, e.podsOf(c), 14)
		for _, p := range e.podsOf(c) {
			assert.True(c, isReady(&p))
		}
	})
	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	// The update of replica 0 goes as far as it can: its router and scaled group replica are
	// replaced, and the replacements wait for a scheduler.
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.breached(c, "upd-0-router"), "replica 0's router is below minAvailable")
		for _, prefix := range []string{"upd-0-router", "upd-0-workers-1-"} {
			uids := e.podUIDs(c, prefix)
			assert.NotEmpty(c, uids)
			for _, name := range uids {
				pod := &corev1.Pod{}
				require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pod))
				assert.Equal(c, "v2", pod.Labels["version"], name)
			}
		}
		assert.Len(c, e.podUIDs(c, "upd-0-"), 7)
	})
	replica0 := e.podUIDs(t, "upd-0-")
	e.deletePod(e.pods("upd-1-router")[0].Name)

	e.waitRecreated("upd-1-workers")
	assert.Equal(t, keys(replica0), keys(e.podUIDs(t, "upd-0-")), "replica 0 keeps exactly its pods")
	assert.True(t, e.breached(t, "upd-0-router"), "still breached: only the update kept it")
	assert.Nil(t, condition(e.pcsg(t, "upd-0-workers").Status.Conditions, apicommon.ConditionGangTerminationInProgress))
}
