//go:build e2einstall

package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

const (
	// nodeMonitorGrace is kube-controller-manager's --node-monitor-grace-period: how long a
	// node may go without a heartbeat before its Ready condition turns Unknown.
	nodeMonitorGrace = 30 * time.Second
	// nodeFailureGrace is grove-operator's nodeFailure.grace in this suite.
	nodeFailureGrace = 5 * time.Second
)

// testNodeFailure stops the kubelet of the node that runs one member of an ordered startup
// and checks what docs/concepts/node-failure.md promises, with real containers:
//
//   - leader and workera run on node A, workerb on node B; both workers start after the leader
//     (CliqueStartupTypeExplicit), so each has a startup waiter.
//   - B's kubelet is killed. kube-controller-manager's node lifecycle controller turns B
//     Ready=Unknown and taints it; nodeFailure.grace later grove-operator force-deletes
//     workerb's pod and its PodClique recreates it with the same index and hostname. B is
//     tainted, so grove-scheduler puts the replacement on A, the only real node left (B's
//     kubelet stays dead: a replacement must not wait for the lost node to come back).
//   - The replacement's startup waiter runs and waits for the leader. To give it something to
//     wait for, the leader is made unready (its readiness probe reads a file the test removes)
//     before B is lost, and made ready again only once the waiter's log says it found the
//     leader unready: the waiter must then finish no earlier than the leader's Ready
//     transition, and the replacement's main container start no earlier either.
//   - leader and workera keep their UIDs and containers; nothing restarts.
func (e *env) testNodeFailure(t *testing.T) {
	ctx := context.Background()
	gate := t.TempDir()
	readyFile := filepath.Join(gate, "ready")
	require.NoError(t, os.WriteFile(readyFile, nil, 0o644))

	leader := clique("leader", 1, "10m", true)
	leader.Spec.PodSpec.Volumes = []corev1.Volume{{Name: "gate", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: gate, Type: ptr.To(corev1.HostPathDirectory)}}}}
	leader.Spec.PodSpec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "gate", MountPath: "/gate"}}
	leader.Spec.PodSpec.Containers[0].ReadinessProbe.Exec.Command = []string{"/bin/busybox", "test", "-e", "/gate/ready"}
	workerA := clique("workera", 1, "10m", true)
	workerB := clique("workerb", 1, "10m", true)
	for _, c := range []*corev1alpha1.PodCliqueTemplateSpec{workerA, workerB} {
		c.Spec.StartsAfter = []string{"leader"}
	}
	// leader and workera are pinned to A and tolerate its cordon; workerb may run on either
	// real node and, while A is cordoned, is placed on B.
	for _, c := range []*corev1alpha1.PodCliqueTemplateSpec{leader, workerA} {
		c.Spec.PodSpec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	workerB.Spec.PodSpec.NodeSelector = nil
	workerB.Spec.PodSpec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName, nodeNameB}}},
		}}},
	}}
	p := pcs("node-loss", 1, leader, workerA, workerB)
	p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)

	e.setUnschedulable(t, nodeName, true)
	t.Cleanup(func() { e.setUnschedulable(t, nodeName, false) })
	require.NoError(t, e.cl.Create(ctx, p))
	before := e.waitCliquePods(t, "node-loss", func(m map[string]corev1.Pod) bool {
		return len(m) == 3 && ready(ptr.To(m["leader"])) && ready(ptr.To(m["workera"])) && ready(ptr.To(m["workerb"]))
	})
	e.setUnschedulable(t, nodeName, false)
	require.Equal(t, nodeName, before["leader"].Spec.NodeName)
	require.Equal(t, nodeName, before["workera"].Spec.NodeName)
	require.Equal(t, nodeNameB, before["workerb"].Spec.NodeName)
	// workerb's waiter talked to the apiserver from B's pod network.
	lost := before["workerb"]
	if w := initStatus(&lost, common.StartupWaiterContainerName); assert.NotNil(t, w) && assert.NotNil(t, w.State.Terminated) {
		assert.Zero(t, w.State.Terminated.ExitCode)
	}

	// The leader turns unready; it is not restarted for that.
	require.NoError(t, os.Remove(readyFile))
	e.waitCliquePods(t, "node-loss", func(m map[string]corev1.Pod) bool { return !ready(ptr.To(m["leader"])) })

	killed := time.Now()
	require.NoError(t, e.nodeB.KillKubelet())
	var unknownAt time.Time
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, nodeMonitorGrace+time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, nodeNameB, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown {
				unknownAt = c.LastTransitionTime.Time
				return true, nil
			}
		}
		return false, nil
	}), "node %s never turned Ready=Unknown", nodeNameB)

	// The replacement: a new pod of workerb's clique with the lost pod's index and hostname,
	// whose waiter found the leader unready and waits.
	leaderClique := before["leader"].Labels[common.LabelPodClique]
	blocked := fmt.Sprintf(`"msg":"listed parent pods","parents":"%s=0/1"`, leaderClique)
	var repl corev1.Pod
	var waiterLog string
	e.waitCliquePods(t, "node-loss", func(m map[string]corev1.Pod) bool {
		repl = m["workerb"]
		if repl.UID == "" || repl.UID == lost.UID {
			return false
		}
		waiterLog = e.containerLog(ctx, &repl, common.StartupWaiterContainerName)
		return strings.Contains(waiterLog, blocked)
	})
	for _, c := range repl.Status.ContainerStatuses {
		assert.Nil(t, c.State.Running, "the replacement's %s runs while the leader is unready", c.Name)
	}
	assert.Equal(t, lost.Spec.Hostname, repl.Spec.Hostname)
	assert.Equal(t, lost.Labels[common.LabelPodCliquePodIndex], repl.Labels[common.LabelPodCliquePodIndex])
	assert.Equal(t, nodeName, repl.Spec.NodeName, "B is tainted unreachable: A is the only real node left")
	assert.False(t, ready(&repl))
	var old corev1.Pod
	err := e.cl.Get(ctx, client.ObjectKeyFromObject(&lost), &old)
	assert.True(t, err != nil || old.UID != lost.UID, "the lost pod %s is still there", lost.Name)

	// The leader turns ready again; only then may the replacement's waiter let it start.
	require.NoError(t, os.WriteFile(readyFile, nil, 0o644))
	after := e.waitCliquePods(t, "node-loss", func(m map[string]corev1.Pod) bool {
		r := m["workerb"]
		return r.UID == repl.UID && ready(&r) && ready(ptr.To(m["leader"]))
	})
	repl = after["workerb"]
	leaderReady := readyTime(ptr.To(after["leader"]))
	w := initStatus(&repl, common.StartupWaiterContainerName)
	require.NotNil(t, w.State.Terminated, "the replacement's waiter did not run to completion")
	assert.Zero(t, w.State.Terminated.ExitCode)
	assert.False(t, w.State.Terminated.FinishedAt.Time.Before(leaderReady),
		"the replacement's waiter finished at %s, before the leader was Ready at %s", w.State.Terminated.FinishedAt, leaderReady)
	require.NotNil(t, repl.Status.ContainerStatuses[0].State.Running)
	assert.False(t, repl.Status.ContainerStatuses[0].State.Running.StartedAt.Time.Before(leaderReady), "the replacement started before the leader was Ready")
	waiterLog = e.containerLog(ctx, &repl, common.StartupWaiterContainerName)
	assert.Contains(t, waiterLog, fmt.Sprintf(`"msg":"every parent PodClique is ready","parents":"%s=1/1"`, leaderClique))

	// The survivors: same pods, same containers, no restart.
	for _, c := range []string{"leader", "workera"} {
		b, a := before[c], after[c]
		assert.Equal(t, b.UID, a.UID, "%s was replaced", c)
		assert.Equal(t, nodeName, a.Spec.NodeName)
		assert.Equal(t, containerIDs(&b), containerIDs(&a), "%s's containers changed", c)
		for _, s := range append(statuses(a.Status.InitContainerStatuses), a.Status.ContainerStatuses...) {
			assert.Zero(t, s.RestartCount, "%s/%s restarted", c, s.Name)
		}
	}

	// The replica is whole again.
	var got corev1alpha1.PodCliqueSet
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.cl.Get(ctx, types.NamespacedName{Namespace: workloadNS, Name: "node-loss"}, &got); err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(got.Status.Conditions, common.ConditionMemberReplacing)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == common.ReasonMembersReplaced, nil
	}), "MemberReplacing: %v", got.Status.Conditions)

	t.Logf("kubelet of %s killed at %s: Ready=Unknown after %s, replacement created after %s, ready after %s (the leader was made ready again after %s)",
		nodeNameB, killed.Format(time.TimeOnly), unknownAt.Sub(killed).Round(time.Second), repl.CreationTimestamp.Sub(killed).Round(time.Second),
		readyTime(&repl).Sub(killed).Round(time.Second), leaderReady.Sub(killed).Round(time.Second))
	t.Logf("the replacement's waiter ran %s .. %s:\n%s", w.State.Terminated.StartedAt.Format(time.TimeOnly), w.State.Terminated.FinishedAt.Format(time.TimeOnly), strings.TrimSpace(waiterLog))
}

// containerLog is a container's log as `kubectl logs --timestamps` shows it (the kubelet's
// nanosecond times; "" when the kubelet has none yet).
func (e *env) containerLog(ctx context.Context, p *corev1.Pod, container string) string {
	out, err := e.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Timestamps: true}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return string(out)
}

// statuses copies s so that appending to it leaves the pod's alone.
func statuses(s []corev1.ContainerStatus) []corev1.ContainerStatus {
	return append([]corev1.ContainerStatus(nil), s...)
}

// containerIDs are the runtime's ids of the pod's containers, init containers included.
func containerIDs(p *corev1.Pod) map[string]string {
	m := map[string]string{}
	for _, s := range append(statuses(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		m[s.Name] = s.ContainerID
	}
	return m
}

// setUnschedulable cordons (or uncordons) a node.
func (e *env) setUnschedulable(t *testing.T, name string, on bool) {
	t.Helper()
	ctx := context.Background()
	n, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	if n.Spec.Unschedulable == on {
		return
	}
	n.Spec.Unschedulable = on
	_, err = e.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// waitCliquePods waits until done holds for the PodCliqueSet's pods by clique (the newest pod
// of a clique, or the one not being deleted, when a replacement and its predecessor are both
// listed) and returns them.
func (e *env) waitCliquePods(t *testing.T, pcsName string, done func(map[string]corev1.Pod) bool) map[string]corev1.Pod {
	t.Helper()
	var byClique map[string]corev1.Pod
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := e.cl.List(ctx, &list, client.InNamespace(workloadNS), client.MatchingLabels{common.LabelPartOfKey: pcsName}); err != nil {
			return false, nil
		}
		byClique = map[string]corev1.Pod{}
		for _, pod := range list.Items {
			c := cliqueOf(&pod)
			if prev, ok := byClique[c]; ok && (pod.DeletionTimestamp != nil || pod.CreationTimestamp.Before(&prev.CreationTimestamp)) {
				continue
			}
			byClique[c] = pod
		}
		return done(byClique), nil
	}), "%s: pods %s", pcsName, summaries(byClique))
	return byClique
}
