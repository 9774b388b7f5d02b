//go:build e2einstall

package realnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

// TestPodRunsAndReachesTheAPIServer runs a real container on the node that dials the
// kubernetes Service's ClusterIP, which only the node's rule routes to the apiserver, reads
// its log through the apiserver (which dials the kubelet), and checks that Stop leaves no
// bridge, rule or state behind.
func TestPodRunsAndReachesTheAPIServer(t *testing.T) {
	require.NoError(t, Prerequisites())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hostIP, err := HostIP()
	require.NoError(t, err)
	c := cluster.StartForTest(t, cluster.Options{SkipGroveCRDs: true, AdvertiseAddress: hostIP,
		APIServerArgs: APIServerArgs, ExtraControllers: Controllers})
	n, err := Start(ctx, c, Options{HostIP: hostIP})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = n.Stop()
		}
	})
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dial"},
		Spec: corev1.PodSpec{
			NodeName:                      n.Name,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "dial", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
				// The kubelet names the Service in the environment, as for every pod.
				Command: []string{"/bin/sh", "-c", `echo "dialing $KUBERNETES_SERVICE_HOST"; nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" </dev/null`},
			}},
		},
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "dial", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	require.NoError(t, err, "the pod did not finish\n%s", n.LogTail(30))
	logs, _ := filepath.Glob(filepath.Join(n.PodLogDir, "default_dial_*", "dial", "*.log"))
	var out []byte
	if len(logs) > 0 {
		out, _ = os.ReadFile(logs[0])
	}
	require.Equal(t, corev1.PodSucceeded, phase, "the container could not reach the apiserver through %s:443: %s", KubernetesServiceIP, out)
	// `kubectl logs`: the apiserver reaches the kubelet at the node's InternalIP.
	apiLog, err := cs.CoreV1().Pods("default").GetLogs("dial", &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	require.Contains(t, string(apiLog), "dialing "+KubernetesServiceIP)

	dir := n.Dir
	stopped = true
	require.NoError(t, n.Stop())
	require.NoDirExists(t, dir)
	require.NoError(t, unmountUnder(dir)) // nothing left mounted
}

// TestStartRemovesWhatADeadRunLeft: a run that dies (kubelet and containerd killed, no Stop)
// leaves shims, containers, mounts and state; the next Start removes them.
func TestStartRemovesWhatADeadRunLeft(t *testing.T) {
	require.NoError(t, Prerequisites())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hostIP, err := HostIP()
	require.NoError(t, err)
	c := cluster.StartForTest(t, cluster.Options{SkipGroveCRDs: true, AdvertiseAddress: hostIP,
		APIServerArgs: APIServerArgs, ExtraControllers: Controllers})
	n, err := Start(ctx, c, Options{HostIP: hostIP})
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Stop() })
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sleeper"},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{
			Name: "sleep", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"/bin/sh", "-c", "while true; do sleep 1; done"},
		}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	}))
	tree := n.shimTree()
	require.GreaterOrEqual(t, len(tree), 3, "shims with a sandbox and a container below them")

	// The owner dies: its children get SIGKILL (the parent-death signal), nothing else runs.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	require.NoError(t, os.WriteFile(filepath.Join(n.Dir, ownerFile), []byte(strconv.Itoa(dead.Process.Pid)), 0o644))
	require.NoError(t, n.kubelet.Kill())
	require.NoError(t, n.containerd.Kill())

	removeStaleNodes()
	require.NoDirExists(t, n.Dir)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, pid := range tree {
			if cluster.ProcessAlive(pid) {
				return false, nil
			}
		}
		return true, nil
	}), "processes of the dead run's containers survived")
}
