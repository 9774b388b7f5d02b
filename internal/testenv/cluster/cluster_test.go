package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelperCluster()
		return
	}
	os.Exit(m.Run())
}

// TestControlPlaneServesAndCollectsGarbage starts the control plane and proves the
// controller-manager's garbage collector runs: deleting an owner removes its dependent.
func TestControlPlaneServesAndCollectsGarbage(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control-plane binaries")
	}
	c := StartForTest(t, Options{SkipGroveCRDs: true})
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)

	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	require.Equal(t, "v1.37.1", v.GitVersion)

	ns := c.TestNamespace(t)
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			BlockOwnerDeletion: ptr.To(true)}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, cs.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "the dependent ConfigMap was not garbage-collected")
}

// TestStopLeavesNoProcess checks Stop ends every process it started.
func TestStopLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control-plane binaries")
	}
	c, err := Start(context.Background(), Options{SkipGroveCRDs: true})
	require.NoError(t, err)
	pids := c.PIDs()
	require.Len(t, pids, 3)
	require.NoError(t, c.Stop())
	for _, pid := range pids {
		require.False(t, ProcessAlive(pid), "pid %d still alive after Stop", pid)
	}
	_, err = os.Stat(c.Dir)
	require.True(t, os.IsNotExist(err), "temporary directory %s left behind", c.Dir)
}

const helperEnv = "GROVE_CLUSTER_TEST_HELPER"

// runHelperCluster is the body of a child test process: it starts a control plane, prints the
// pids and blocks until it is killed.
func runHelperCluster() {
	c, err := Start(context.Background(), Options{SkipGroveCRDs: true})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	var s []string
	for _, p := range c.PIDs() {
		s = append(s, strconv.Itoa(p))
	}
	fmt.Println("PIDS", strings.Join(s, " "))
	select {}
}

// TestKilledOwnerTakesControlPlaneDown kills (SIGKILL, no cleanup) a process that started a
// control plane, as a go test timeout would, and checks that etcd, kube-apiserver and
// kube-controller-manager die with it.
func TestKilledOwnerTakesControlPlaneDown(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control-plane binaries")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())

	var pids []int
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "PIDS ") || strings.HasPrefix(sc.Text(), "ERR ") {
				lines <- sc.Text()
				return
			}
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		require.True(t, ok, "helper exited without reporting pids")
		require.True(t, strings.HasPrefix(line, "PIDS "), line)
		for _, f := range strings.Fields(strings.TrimPrefix(line, "PIDS ")) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			pids = append(pids, pid)
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("helper did not start a control plane in time")
	}
	require.Len(t, pids, 3)
	for _, pid := range pids {
		require.True(t, ProcessAlive(pid), "pid %d should run while its owner lives", pid)
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			if ProcessAlive(pid) {
				return false
			}
		}
		return true
	}, 15*time.Second, 50*time.Millisecond, "control-plane processes outlived their killed owner")
}
