//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// servingPCS is a PodCliqueSet replica of a router (standalone) and a scaling group "workers"
// of two replicas of clique w (minAvailable 1: one base, one scaled PodGang).
func servingPCS(ns, name string, replicas, routers int32, opts ...cliqueOpt) *corev1alpha1.PodCliqueSet {
	return withGroup(pcs(ns, name, replicas, clique("router", routers, "1", opts...), clique("w", 2, "1")), "workers", 2, 1, "w")
}

// failContainer has kwok report the pod's container as exited with an error, as the kubelet
// would: the pod stays bound but no longer counts as available. It returns once the API shows
// the failure.
func failContainer(t *testing.T, env *framework.Env, pod corev1.Pod) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, cluster.KwokFailContainerAnnotation, pod.Spec.Containers[0].Name)
	require.NoError(t, env.Client.Patch(context.Background(), &pod, client.RawPatch(types.MergePatchType, []byte(patch))))
	require.Eventually(t, func() bool {
		p := &corev1.Pod{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(&pod), p); err != nil || isReady(p) {
			return false
		}
		return slices.ContainsFunc(p.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool {
			return c.State.Terminated != nil && c.State.Terminated.ExitCode == 1
		})
	}, 30*time.Second, 50*time.Millisecond, "kwok did not fail the container of %s", pod.Name)
}

// uidsWhere returns the UIDs of the pods a label selects, by pod name.
func uidsWhere(pods []corev1.Pod, match func(labels map[string]string) bool) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range pods {
		if match(p.Labels) {
			out[p.Name] = p.UID
		}
	}
	return out
}

func labelIs(key, value string) func(map[string]string) bool {
	return func(l map[string]string) bool { return l[key] == value }
}

func labelIsNot(key, value string) func(map[string]string) bool {
	return func(l map[string]string) bool { return l[key] != value }
}

// deletedNames are the names of the pods in the deletions.
func deletedNames(ds []deletion) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.pod.Name)
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// eventCount counts the events of a reason in the namespace (a series counts its repeats).
func eventCount(t *testing.T, env *framework.Env, ns, reason string) int {
	t.Helper()
	list, err := env.Clientset.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	n := 0
	for _, e := range list.Items {
		if e.Reason == reason {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

// Gang termination: a container failing (in kwok) in a pod of scaled scaling-group replica 1
// breaches its PodClique's minAvailable; after terminationDelay exactly that group replica's pods
// are recreated (the group keeps its other replica available). A failed router breaches the base
// gang: after the delay every pod of that PodCliqueSet replica is recreated, and the other
// replica keeps its pods. Each failure is timed from before it is requested: the breach cannot
// start earlier.
func TestGangTerminationRecreatesTheBreachedGang(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 6, twoCPUNode)
	ctx := context.Background()
	const delay = 3 * time.Second
	p := servingPCS(ns, "gt", 2, 1)
	p.Spec.Template.TerminationDelay = &metav1.Duration{Duration: delay}
	require.NoError(t, env.Client.Create(ctx, p))
	pods := waitPods(t, env, ns, "gt", 10)

	// 1. Scaling-group replica 1 of PodCliqueSet replica 0.
	pcsg := common.PodCliqueScalingGroupName("gt", 0, "workers")
	groupReplica := labelIs(common.LabelPodClique, common.ScalingGroupPodCliqueName(pcsg, 1, "w"))
	failing, rest := uidsWhere(pods, groupReplica), uidsWhere(pods, func(l map[string]string) bool { return !groupReplica(l) })
	require.Len(t, failing, 2)
	scaledGang := podGang(env, ns, common.ScaledPodGangName(pcsg, 1, 1)).UID
	crashedAt := time.Now()
	failContainer(t, env, pods[slices.IndexFunc(pods, func(p corev1.Pod) bool { return groupReplica(p.Labels) })])
	pods = waitRecreated(t, env, w, ns, "gt", 10, failing)
	assert.Equal(t, rest, uidsWhere(pods, func(l map[string]string) bool { return !groupReplica(l) }), "every other pod is kept")
	assert.NotEqual(t, scaledGang, podGang(env, ns, common.ScaledPodGangName(pcsg, 1, 1)).UID, "the scaled PodGang was recreated")
	assertDeletedAfter(t, w.deletionsIn(ns), crashedAt.Add(delay))

	// 2. The router of PodCliqueSet replica 0: the whole replica.
	mark := len(w.deletionsIn(ns))
	replica0 := labelIs(common.LabelPodCliqueSetReplicaIndex, "0")
	failing, rest = uidsWhere(pods, replica0), uidsWhere(pods, labelIsNot(common.LabelPodCliqueSetReplicaIndex, "0"))
	require.Len(t, failing, 5)
	baseGang := podGang(env, ns, common.BasePodGangName("gt", 0)).UID
	crashedAt = time.Now()
	failContainer(t, env, pods[slices.IndexFunc(pods, func(p corev1.Pod) bool {
		return p.Labels[common.LabelPodClique] == common.StandalonePodCliqueName("gt", 0, "router")
	})])
	pods = waitRecreated(t, env, w, ns, "gt", 10, failing, mark)
	assert.Equal(t, rest, uidsWhere(pods, labelIsNot(common.LabelPodCliqueSetReplicaIndex, "0")), "replica 1 keeps its pods")
	assert.NotEqual(t, baseGang, podGang(env, ns, common.BasePodGangName("gt", 0)).UID, "the base PodGang was recreated")
	assertDeletedAfter(t, w.deletionsIn(ns)[mark:], crashedAt.Add(delay))

	pclqs, gangs, all := countGrove(t, ctx, env.Client, ns, "gt")
	assert.Equal(t, []int{6, 4, 10}, []int{pclqs, gangs, all}, "PodCliques, PodGangs, pods")
	assert.Equal(t, 1, eventCount(t, env, ns, "ScalingGroupReplicaRecreated"))
	assert.Equal(t, 1, eventCount(t, env, ns, "GangTerminated"))
	w.assertNoPartialGang()
}

// waitRecreated waits until the PodCliqueSet is back to want ready pods none of which is one of
// the gone ones, and checks that the pods deleted since deletion mark (optional) are exactly
// the gone ones.
func waitRecreated(t *testing.T, env *framework.Env, w *gangWatcher, ns, pcsName string, want int, gone map[string]types.UID, mark ...int) []corev1.Pod {
	t.Helper()
	pods := waitPods(t, env, ns, pcsName, want, func(p corev1.Pod) bool { return gone[p.Name] != p.UID })
	ds := w.deletionsIn(ns)
	if len(mark) > 0 {
		ds = ds[mark[0]:]
	}
	assert.Equal(t, sortedKeys(gone), deletedNames(ds), "exactly these pods were deleted")
	return pods
}

// assertDeletedAfter checks that no deletion began before the termination delay was over. The
// breach is timed from its condition's lastTransitionTime, which the API keeps to the second
// (truncated): the delay may end up to a second early.
func assertDeletedAfter(t *testing.T, ds []deletion, notBefore time.Time) {
	t.Helper()
	notBefore = notBefore.Add(-time.Second)
	for _, d := range ds {
		assert.False(t, d.at.Before(notBefore), "%s deleted %s before terminationDelay ran out", d.pod.Name, notBefore.Sub(d.at))
	}
}

// RollingRecreate: after a template change, PodCliqueSet replica 0 is updated before replica 1;
// inside a replica the router's ready pods go one at a time, highest index first, each once the
// other two are ready again, and the scaling group recreates its scaled replica before the base
// one while the other replica stays available. Every pod is replaced exactly once.
func TestRollingRecreateOrder(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 8, twoCPUNode)
	ctx := context.Background()
	p := servingPCS(ns, "roll", 2, 3, minAvailable(2))
	require.NoError(t, env.Client.Create(ctx, p))
	before := uidsWhere(waitPods(t, env, ns, "roll", 14), func(map[string]string) bool { return true })
	mark := len(w.deletionsIn(ns))

	cur := updatePCS(t, env, ns, "roll", func(p *corev1alpha1.PodCliqueSet) {
		for _, c := range p.Spec.Template.Cliques {
			c.Labels = map[string]string{"version": "v2"}
		}
	})
	if !assert.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur))
		up := cur.Status.UpdateProgress
		return cur.Status.UpdatedReplicas == 2 && up != nil && up.UpdateEndedAt != nil && up.CurrentlyUpdating == nil
	}, 3*time.Minute, 250*time.Millisecond, "the update never finished") {
		t.Fatal(dumpState(t, env, ns, "roll"))
	}
	waitPods(t, env, ns, "roll", 14, func(p corev1.Pod) bool { return p.Labels["version"] == "v2" && before[p.Name] == "" })

	ds := w.deletionsIn(ns)[mark:]
	assert.Equal(t, sortedKeys(before), deletedNames(ds), "every old pod deleted exactly once, no new one")
	type step struct{ replica, what string }
	var steps []step
	for i, d := range ds {
		l := d.pod.Labels
		replica, clique := l[common.LabelPodCliqueSetReplicaIndex], l[common.LabelPodClique]
		if i > 0 && replica != ds[i-1].pod.Labels[common.LabelPodCliqueSetReplicaIndex] {
			// Replica 1 starts once replica 0 runs its new template, all ready.
			other := common.PodCliqueScalingGroupName("roll", 0, "workers")
			assert.Equal(t, map[string]int{"roll-0-router": 3, other + "-0-w": 2, other + "-1-w": 2},
				pick(d.readyPeers, "roll-0-router", other+"-0-w", other+"-1-w"), "replica 0 done before %s", d.pod.Name)
		}
		if l[common.LabelPodCliqueScalingGroup] == "" {
			steps = append(steps, step{replica, "router-" + l[common.LabelPodCliquePodIndex]})
			assert.Equal(t, 2, d.readyPeers[clique], "the other routers were ready when %s went", d.pod.Name)
			continue
		}
		j := l[common.LabelPodCliqueScalingGroupReplicaIndex]
		steps = append(steps, step{replica, "workers-" + j})
		pcsg := common.PodCliqueScalingGroupName("roll", atoi(replica), "workers")
		otherReplica := common.ScalingGroupPodCliqueName(pcsg, 1-atoi(j), "w")
		assert.Equal(t, 2, d.readyPeers[otherReplica], "group replica %s was available when %s went", otherReplica, d.pod.Name)
	}
	var order []step
	for _, s := range steps {
		if !slices.Contains(order, s) {
			order = append(order, s)
		}
	}
	byReplica := map[string][]string{}
	var replicas []string
	for _, s := range order {
		if !slices.Contains(replicas, s.replica) {
			replicas = append(replicas, s.replica)
		}
		byReplica[s.replica] = append(byReplica[s.replica], s.what)
	}
	assert.Equal(t, []string{"0", "1"}, replicas, "replica 0, then replica 1")
	defer func() {
		if t.Failed() {
			for _, d := range ds {
				t.Logf("deleted %s (replica %s, index %s, group replica %q) at %s, ready peers %v", d.pod.Name, d.pod.Labels[common.LabelPodCliqueSetReplicaIndex],
					d.pod.Labels[common.LabelPodCliquePodIndex], d.pod.Labels[common.LabelPodCliqueScalingGroupReplicaIndex], d.at.Format("15:04:05.000"), d.readyPeers)
			}
		}
	}()
	for _, r := range replicas {
		routers := slices.DeleteFunc(slices.Clone(byReplica[r]), func(s string) bool { return s[:7] == "workers" })
		groups := slices.DeleteFunc(slices.Clone(byReplica[r]), func(s string) bool { return s[:6] == "router" })
		assert.Equal(t, []string{"router-2", "router-1", "router-0"}, routers, "replica %s: highest index first", r)
		assert.Equal(t, []string{"workers-1", "workers-0"}, groups, "replica %s: scaled group replica first", r)
	}
	assert.Equal(t, []string{"roll-0-router", "roll-1-router"}, cur.Status.UpdateProgress.UpdatedPodCliques)
	assert.Equal(t, []string{"roll-0-workers", "roll-1-workers"}, cur.Status.UpdateProgress.UpdatedPodCliqueScalingGroups)
	w.assertNoPartialGang()
}

func pick(m map[string]int, keys ...string) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
