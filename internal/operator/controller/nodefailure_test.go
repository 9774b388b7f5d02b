package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// nodeFailureConfig shortens the node-failure timings for tests.
func nodeFailureConfig(grace time.Duration, mutate ...func(*configv1alpha1.NodeFailureConfiguration)) envOption {
	return withConfig(func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.NodeFailure.Grace = metav1.Duration{Duration: grace}
		cfg.NodeFailure.InitialBackOff = metav1.Duration{Duration: time.Second}
		for _, m := range mutate {
			m(&cfg.NodeFailure)
		}
	})
}

// setNodeReady sets a node's Ready condition as the node lifecycle controller (Unknown) or a
// kubelet (False) would, from now on.
func (e *env) setNodeReady(name string, status corev1.ConditionStatus) time.Time {
	e.t.Helper()
	return e.setNodeReadySince(name, status, time.Now())
}

// setNodeReadySince is setNodeReady with the transition at since.
func (e *env) setNodeReadySince(name string, status corev1.ConditionStatus, since time.Time) time.Time {
	e.t.Helper()
	now := metav1.NewTime(since.Truncate(time.Second))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(e.t, e.c.Get(e.ctx, client.ObjectKeyFromObject(n), n))
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	require.NoError(e.t, e.c.Status().Update(e.ctx, n))
	return now.Time
}

// placeGang binds the PodClique's n pods: the first n-1 to running (a kwok node, so they run),
// the last to last. It returns the UIDs of the first and the last pod.
func (e *env) placeGang(pclq string, n int32, running, last string) (map[types.UID]string, corev1.Pod) {
	e.t.Helper()
	pods := e.ungatedPods(pclq, int(n))
	kept := map[types.UID]string{}
	for _, p := range pods[:n-1] {
		e.bind(&p, running)
		kept[p.UID] = p.Name
	}
	e.bind(&pods[n-1], last)
	pods[n-1].Spec.NodeName = last
	e.waitScheduled(pclq, n)
	return kept, pods[n-1]
}

// waitScheduled waits until the PodClique's status counts n pods bound: the operator's cache
// shows the bindings, so a node event that follows finds the pods on the node.
func (e *env) waitScheduled(pclq string, n int32) {
	e.t.Helper()
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, n, e.pclq(c, pclq).Status.ScheduledReplicas)
	}, "%s has %d pods bound", pclq, n)
}

// podGone reports whether a pod is gone (not merely terminating).
func (e *env) podGone(t require.TestingT, p corev1.Pod) bool {
	err := e.c.Get(e.ctx, client.ObjectKeyFromObject(&p), &corev1.Pod{})
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

// strangerPod is a pod on node that Grove did not create, with Grove's labels for pcs but no
// PodClique controlling it: a node failure must leave it alone.
func (e *env) strangerPod(node, pcs string) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stranger-" + node,
		Labels: map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: pcs,
			apicommon.LabelPodCliqueSetReplicaIndex: "0"}},
		Spec: podSpec()}
	p.Spec.NodeName = node
	e.create(p)
	return p
}

func (e *env) memberReplacing(t require.TestingT, pcs string) *metav1.Condition {
	return condition(e.pcs(t, pcs).Status.Conditions, apicommon.ConditionMemberReplacing)
}

// TestNodeFailureReplacesOnlyTheLostPod: a gang of 4 has 3 pods running on one node and 1 on a
// node whose kubelet stops reporting (Ready Unknown). Not before nodeFailure.grace, only that
// pod is replaced: force-deleted (the node is unreachable), recreated with its index, and the
// 3 others keep their UIDs and keep running. A pod on the node Grove did not create is left
// alone. MemberReplacing on the PodCliqueSet and its PodGang names the node while the
// replacement is pending, and turns False once the replica is whole again.
func TestNodeFailureReplacesOnlyTheLostPod(t *testing.T) {
	const grace = 3 * time.Second
	e := newEnv(t, nodeFailureConfig(grace))
	running, failing := e.kwokNode(), e.node()
	e.create(oneClique(e.ns, "nf", 4, nil))
	kept, lost := e.placeGang("nf-0-w", 4, running, failing)
	stranger := e.strangerPod(failing, "nf")
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, e.podUIDs(c, "nf-0-w"), 4)
		assert.False(c, e.breached(c, "nf-0-w"))
	}, "the gang is placed")

	failedAt := e.setNodeReady(failing, corev1.ConditionUnknown)
	var replacement corev1.Pod
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.podGone(c, lost), "the lost pod is force-deleted")
		pods := e.pods("nf-0-w")
		if assert.Len(c, pods, 4) {
			for _, p := range pods {
				if _, ok := kept[p.UID]; !ok {
					replacement = p
				}
			}
		}
	}, "the lost pod is replaced")
	assert.Equal(t, lost.Spec.Hostname, replacement.Spec.Hostname, "the replacement keeps the index")
	assert.Empty(t, replacement.Spec.NodeName)
	e.eventually(func(c *assert.CollectT) {
		st := e.pcs(c, "nf").Status
		if assert.Len(c, st.NodeFailures, 1) {
			nf := st.NodeFailures[0]
			assert.Equal(c, []string{failing}, nf.FailedNodes)
			assert.EqualValues(c, 1, nf.Replacements)
			assert.False(c, nf.LastReplacementTime.Time.Before(failedAt.Add(grace)), "nothing is replaced inside the grace (failed %s, replaced %s)", failedAt, nf.LastReplacementTime)
		}
		cond := e.memberReplacing(c, "nf")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, apicommon.ReasonNodeFailed, cond.Reason)
			assert.Contains(c, cond.Message, failing)
		}
	}, "the PodCliqueSet says a member is replaced")
	e.eventually(func(c *assert.CollectT) {
		pgc := condition(e.podGang(c, "nf-0").Status.Conditions, apicommon.ConditionMemberReplacing)
		if assert.NotNil(c, pgc) {
			assert.Equal(c, metav1.ConditionTrue, pgc.Status)
			assert.Contains(c, pgc.Message, failing)
		}
	}, "the PodGang says a member is replaced")
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(stranger), stranger))
	assert.Nil(t, stranger.DeletionTimestamp, "a pod Grove did not create is not touched")

	e.bind(&replacement, running)
	e.eventually(func(c *assert.CollectT) {
		cond := e.memberReplacing(c, "nf")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonMembersReplaced, cond.Reason)
		}
		pgc := condition(e.podGang(c, "nf-0").Status.Conditions, apicommon.ConditionMemberReplacing)
		if assert.NotNil(c, pgc) {
			assert.Equal(c, metav1.ConditionFalse, pgc.Status)
		}
		if nf := e.pcs(c, "nf").Status.NodeFailures; assert.Len(c, nf, 1, "the replacement is remembered for the back-off") {
			assert.EqualValues(c, 1, nf[0].Replacements)
			assert.Empty(c, nf[0].FailedNodes)
		}
	}, "the replica is whole again")
	now := e.podUIDs(t, "nf-0-w")
	for uid, name := range kept {
		assert.Contains(t, now, uid, "%s kept running", name)
	}
	for _, p := range e.pods("nf-0-w") {
		if _, ok := kept[p.UID]; ok {
			for _, s := range p.Status.ContainerStatuses {
				assert.Zero(t, s.RestartCount, "%s never restarted", p.Name)
			}
		}
	}
	assert.Equal(t, 0, e.eventCount("GangTerminated"))
	assert.Equal(t, []string{apicommon.NodeFailureFieldManager}, conditionOwners(t, e.podGang(t, "nf-0"))[apicommon.ConditionMemberReplacing],
		"MemberReplacing has its own writer")
}

// TestNodeFailureReplicaIsWholeOnlyWhenItsPodsAre: while the replacement is pending, a
// PodClique status that still counts every pod ready (it lags its pods) must not end the
// replacement: MemberReplacing keeps naming the failed node until the replacement is ready.
func TestNodeFailureReplicaIsWholeOnlyWhenItsPodsAre(t *testing.T) {
	e := newEnv(t, nodeFailureConfig(time.Second))
	running, failing := e.kwokNode(), e.node()
	e.create(oneClique(e.ns, "nf", 3, nil))
	kept, lost := e.placeGang("nf-0-w", 3, running, failing)
	e.setNodeReady(failing, corev1.ConditionUnknown)
	var replacement corev1.Pod
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.podGone(c, lost))
		pods := e.pods("nf-0-w")
		if assert.Len(c, pods, 3) {
			for _, p := range pods {
				if _, ok := kept[p.UID]; !ok {
					replacement = p
				}
			}
		}
		cond := e.memberReplacing(c, "nf")
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonNodeFailed, cond.Reason)
		}
	}, "the lost pod is replaced")

	// The PodClique's status says all 3 are ready, as a status that has not caught up would.
	// Re-read on conflict: the operator writes this status too.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pclq := e.pclq(t, "nf-0-w")
		pclq.Status.ReadyReplicas = 3
		return e.c.Status().Update(e.ctx, pclq)
	}))
	assert.Never(t, func() bool {
		cond := condition(e.pcs(t, "nf").Status.Conditions, apicommon.ConditionMemberReplacing)
		return cond == nil || cond.Reason != apicommon.ReasonNodeFailed
	}, 3*time.Second, 100*time.Millisecond, "the replica passes for whole while its replacement is pending")

	e.bind(&replacement, running)
	e.eventually(func(c *assert.CollectT) {
		cond := e.memberReplacing(c, "nf")
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonMembersReplaced, cond.Reason)
		}
	}, "the replica is whole once the replacement is ready")
}

// TestNodeFailureDeletesGracefullyUnlessUnreachable: a node whose kubelet still reports (Ready
// False) gets a graceful delete; so does an unreachable one when forceDeletePods is off. Either
// way the pod is replaced and the pod on the failed node stays Terminating.
func TestNodeFailureDeletesGracefullyUnlessUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status corev1.ConditionStatus
		force  bool
	}{
		{"kubelet reports NotReady", corev1.ConditionFalse, true},
		{"unreachable, force delete off", corev1.ConditionUnknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nodeFailureConfig(time.Second, func(n *configv1alpha1.NodeFailureConfiguration) {
				n.ForceDeletePods = ptr.To(tc.force)
			}))
			running, failing := e.kwokNode(), e.node()
			e.create(oneClique(e.ns, "nf", 2, nil))
			kept, lost := e.placeGang("nf-0-w", 2, running, failing)
			e.setNodeReady(failing, tc.status)
			e.eventually(func(c *assert.CollectT) {
				p := &corev1.Pod{}
				if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(&lost), p)) {
					assert.NotNil(c, p.DeletionTimestamp, "deleted")
					assert.NotZero(c, ptr.Deref(p.DeletionGracePeriodSeconds, 0), "not force-deleted")
				}
				assert.Len(c, e.pods("nf-0-w"), 2, "replaced")
			})
			assert.Subset(t, keys(e.podUIDs(t, "nf-0-w")), keys(kept))
		})
	}
}

// TestNodeFailureUnreachableTaint: the unreachable taint alone (Ready still True in a stale
// status) makes a node failed once it is older than the grace.
func TestNodeFailureUnreachableTaint(t *testing.T) {
	e := newEnv(t, nodeFailureConfig(time.Second))
	running, failing := e.kwokNode(), e.node()
	e.create(oneClique(e.ns, "nf", 2, nil))
	kept, lost := e.placeGang("nf-0-w", 2, running, failing)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: failing}}
	e.update(n, func() {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.Now())})
	})
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.podGone(c, lost), "force-deleted")
		assert.Len(c, e.pods("nf-0-w"), 2, "replaced")
	})
	assert.Subset(t, keys(e.podUIDs(t, "nf-0-w")), keys(kept))
}

// TestNodeFailureDeletedNodeForceDeletesStuckPods: a pod someone deleted on a node without a
// kubelet stays Terminating; once the node is deleted it is force-deleted (upstream Grove #401)
// and its replacement comes; the pod a stranger put there is left alone.
func TestNodeFailureDeletedNodeForceDeletesStuckPods(t *testing.T) {
	e := newEnv(t, nodeFailureConfig(time.Second))
	running, failing := e.kwokNode(), e.node()
	e.create(oneClique(e.ns, "nf", 3, nil))
	pods := e.ungatedPods("nf-0-w", 3)
	e.bind(&pods[0], running)
	e.bind(&pods[1], failing)
	e.bind(&pods[2], failing)
	e.waitScheduled("nf-0-w", 3)
	stranger := e.strangerPod(failing, "nf")
	e.deletePod(pods[1].Name)
	e.eventually(func(c *assert.CollectT) { assert.Len(c, e.pods("nf-0-w"), 3, "the deleted pod is replaced") })
	require.False(t, e.podGone(t, pods[1]), "no kubelet: the deleted pod stays Terminating")

	require.NoError(t, e.c.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: failing}}))
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.podGone(c, pods[1]), "the stuck pod is force-deleted")
		assert.True(c, e.podGone(c, pods[2]), "the live pod of the deleted node is replaced")
		assert.Len(c, e.pods("nf-0-w"), 3)
	})
	assert.Contains(t, e.podUIDs(t, "nf-0-w"), pods[0].UID)
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(stranger), stranger))
	assert.Nil(t, stranger.DeletionTimestamp, "a pod Grove did not create is not touched")
	assert.GreaterOrEqual(t, e.eventCount(apicommon.ReasonPodForceDeleted), 2)
	require.NoError(t, e.c.Delete(context.Background(), stranger, client.GracePeriodSeconds(0)))
}

// TestNodeFailureBackOffAndBudget: with maxReplacements 2 and a back-off of 3s, a replica
// whose replacement lands on a node that fails right away is replaced again only after the
// back-off; the third failure finds the budget used up: that pod is left where it is and
// MemberReplacing says ReplacementBudgetExhausted.
func TestNodeFailureBackOffAndBudget(t *testing.T) {
	const backOff = 3 * time.Second
	e := newEnv(t, nodeFailureConfig(time.Second, func(n *configv1alpha1.NodeFailureConfiguration) {
		n.InitialBackOff = metav1.Duration{Duration: backOff}
		n.MaxReplacements = ptr.To[int32](2)
	}))
	running := e.kwokNode()
	e.create(oneClique(e.ns, "nf", 2, nil))
	kept, lost := e.placeGang("nf-0-w", 2, running, e.node())
	var times []time.Time
	for round := range 3 {
		e.setNodeReady(lost.Spec.NodeName, corev1.ConditionUnknown)
		if round == 2 {
			break
		}
		e.eventually(func(c *assert.CollectT) {
			// The lost pod is only swapped for its replacement once it is gone: a list taken
			// right after a Get that still saw it holds the replacement already, and taking
			// that for the lost pod would wait for the replacement to go.
			if !assert.True(c, e.podGone(c, lost)) {
				return
			}
			pods := e.pods("nf-0-w")
			if assert.Len(c, pods, 2, "pods %v", podsOnNodes(pods)) {
				for _, p := range pods {
					if _, ok := kept[p.UID]; !ok {
						lost = p
					}
				}
			}
		}, "round %d: replaced", round)
		var last time.Time
		e.eventually(func(c *assert.CollectT) {
			nf := e.pcs(c, "nf").Status.NodeFailures
			if assert.Len(c, nf, 1) && assert.EqualValues(c, round+1, nf[0].Replacements) {
				last = nf[0].LastReplacementTime.Time
			}
		}, "round %d: the replacement is counted", round)
		times = append(times, last)
		next := e.node()
		e.bind(&lost, next)
		lost.Spec.NodeName = next
		e.waitScheduled("nf-0-w", 2)
	}
	// Status times have whole seconds.
	assert.GreaterOrEqual(t, times[1].Sub(times[0]), backOff-time.Second, "the second replacement backs off")
	e.eventually(func(c *assert.CollectT) {
		cond := e.memberReplacing(c, "nf")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonReplacementBudgetExhausted, cond.Reason)
			assert.Contains(c, cond.Message, lost.Spec.NodeName)
		}
	}, "the budget is used up")
	p := &corev1.Pod{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(&lost), p))
	assert.Nil(t, p.DeletionTimestamp, "past the budget the pod is not replaced")
	assert.EqualValues(t, 2, e.pcs(t, "nf").Status.NodeFailures[0].Replacements)
}

// TestNodeFailureOfOneIncidentIsNotBackedOff: two nodes of a replica go down together, but the
// second is seen failed only after the first one's pod was replaced. Its failure began before
// that replacement, so it belongs to the same incident: its pod is replaced at once, not after
// the replica's back-off (five minutes here).
func TestNodeFailureOfOneIncidentIsNotBackedOff(t *testing.T) {
	e := newEnv(t, nodeFailureConfig(time.Second, func(n *configv1alpha1.NodeFailureConfiguration) {
		n.InitialBackOff = metav1.Duration{Duration: 5 * time.Minute}
		n.MaxBackOff = metav1.Duration{Duration: 5 * time.Minute}
	}))
	running, first, second := e.kwokNode(), e.node(), e.node()
	e.create(oneClique(e.ns, "nf", 3, nil))
	pods := e.ungatedPods("nf-0-w", 3)
	e.bind(&pods[0], running)
	e.bind(&pods[1], first)
	e.bind(&pods[2], second)
	e.waitScheduled("nf-0-w", 3)

	failedAt := e.setNodeReady(first, corev1.ConditionUnknown)
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.podGone(c, pods[1]))
		if nf := e.pcs(c, "nf").Status.NodeFailures; assert.Len(c, nf, 1) {
			assert.EqualValues(c, 1, nf[0].Replacements)
		}
	}, "the first node's pod is replaced")
	// The second node went down with the first; the operator learns of it now.
	e.setNodeReadySince(second, corev1.ConditionUnknown, failedAt)
	e.eventually(func(c *assert.CollectT) {
		assert.True(c, e.podGone(c, pods[2]), "the second node's pod is replaced without the back-off")
	}, "the second node's pod is replaced")
	e.eventually(func(c *assert.CollectT) {
		if nf := e.pcs(c, "nf").Status.NodeFailures; assert.Len(c, nf, 1) {
			assert.EqualValues(c, 2, nf[0].Replacements)
		}
	}, "both replacements are counted")
}

// TestNodeFailureRecreateGang: under nodeFailurePolicy RecreateGang a node failure recreates
// the whole replica at once, without waiting for terminationDelay.
func TestNodeFailureRecreateGang(t *testing.T) {
	e := newEnv(t, nodeFailureConfig(time.Second))
	running, failing := e.kwokNode(), e.node()
	pcs := oneClique(e.ns, "nf", 3, nil)
	pcs.Spec.Template.NodeFailurePolicy = ptr.To(corev1alpha1.NodeFailurePolicyRecreateGang)
	e.create(pcs)
	kept, _ := e.placeGang("nf-0-w", 3, running, failing)
	pclqUID := e.pclq(t, "nf-0-w").UID
	e.setNodeReady(failing, corev1.ConditionUnknown)
	e.eventually(func(c *assert.CollectT) {
		assert.NotEqual(c, pclqUID, e.pclq(c, "nf-0-w").UID, "the PodClique is recreated")
		now := e.podUIDs(c, "nf-0-w")
		assert.Len(c, now, 3)
		assert.True(c, disjoint(kept, now), "every pod of the replica is new")
	})
	assert.Equal(t, 1, e.eventCount("GangTerminated"))
}

// TestNodeFailureRecreateGangScopesToTheScaledGang: under RecreateGang, a failed node that
// only ran a pod of scaling-group replica 1 (a scaled PodGang of its own) recreates that group
// replica and its PodGang, as gang termination would; the router and group replica 0 (the
// base PodGang) keep their pods.
func TestNodeFailureRecreateGangScopesToTheScaledGang(t *testing.T) {
	e := newEnv(t, nodeFailureConfig(time.Second))
	running, failing := e.kwokNode(), e.node()
	pcs := disaggregated(e.ns, "nf", 1)
	pcs.Spec.Template.NodeFailurePolicy = ptr.To(corev1alpha1.NodeFailurePolicyRecreateGang)
	e.create(pcs)
	lostName := ""
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("")
		assert.Len(c, pods, e.templatePods(c))
		for _, p := range pods {
			if p.Spec.NodeName == "" && !gated(&p) {
				node := running
				if lostName == "" && strings.HasPrefix(p.Name, "nf-0-workers-1-prefill-") {
					node, lostName = failing, p.Name
				}
				b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				_ = e.c.SubResource("binding").Create(e.ctx, &p, b)
			}
			assert.NotEmpty(c, p.Spec.NodeName, "%s bound", p.Name)
		}
	}, "every pod is bound")
	require.NotEmpty(t, lostName)
	groupReplica1 := e.podUIDs(t, "nf-0-workers-1-")
	rest := map[types.UID]string{}
	for _, prefix := range []string{"nf-0-router", "nf-0-workers-0-"} {
		for uid, n := range e.podUIDs(t, prefix) {
			rest[uid] = n
		}
	}
	require.Len(t, groupReplica1, 3)
	require.Len(t, rest, 4)
	scaledGang, baseGang := e.podGang(t, "nf-0-workers-0").UID, e.podGang(t, "nf-0").UID

	e.setNodeReady(failing, corev1.ConditionUnknown)
	e.eventually(func(c *assert.CollectT) {
		now := e.podUIDs(c, "nf-0-workers-1-")
		assert.Len(c, now, 3)
		assert.True(c, disjoint(groupReplica1, now), "every pod of group replica 1 is new")
		assert.NotEqual(c, scaledGang, e.podGang(c, "nf-0-workers-0").UID, "its scaled PodGang too")
	}, "group replica 1 is recreated")
	stillThere := map[types.UID]string{}
	for _, prefix := range []string{"nf-0-router", "nf-0-workers-0-"} {
		for uid, n := range e.podUIDs(t, prefix) {
			stillThere[uid] = n
		}
	}
	assert.Equal(t, keys(rest), keys(stillThere), "the router and group replica 0 keep exactly their pods")
	assert.Equal(t, baseGang, e.podGang(t, "nf-0").UID, "the base PodGang stays")
	assert.Equal(t, 1, e.eventCount("ScalingGroupReplicaRecreated"))
	assert.Zero(t, e.eventCount("GangTerminated"))
}

func podsOnNodes(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.Spec.NodeName)
	}
	return out
}
