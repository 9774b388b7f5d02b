//go:build e2e

package scenarios

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ai-dynamo/grove/e2e/demo"
	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
)

// demoRunTimeout bounds one `grove-demo up` (it takes about a minute once the binaries exist)
// and demoStopTimeout one `grove-demo down`.
const (
	demoRunTimeout  = 6 * time.Minute
	demoStopTimeout = 2 * time.Minute
)

var (
	demoScaledPlaced = regexp.MustCompile(`✓ scaled PodGang (\S+) placed whole in rack (\S+) \((\d+) pods\)`)
	demoPending      = regexp.MustCompile(`✓ PodGang (\S+) whole-pending, 0 of (\d+) pods bound: (\S.*)`)
)

// `grove-demo up` (what `make demo` runs) exits 0 after showing the tree with the scaled PodGang
// in one rack and the too-big gang pending with its reason, which the API confirms; `grove-demo
// down` then leaves no process of the demo running.
func TestDemoUpAndDown(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	binDir, err := cluster.BinDir()
	require.NoError(t, err)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "grove-demo")
	demoCmd(t, root, binDir, demoRunTimeout, "go", "build", "-o", bin, "./e2e/cmd/grove-demo")

	stateDir := filepath.Join(tmp, "state")
	// Registered after TempDir, so it runs first: nothing may outlive the test or hold the dir.
	t.Cleanup(func() { _, _ = runDemo(root, binDir, demoStopTimeout, bin, "down", "--state-dir", stateDir) })
	start := time.Now()
	out := demoCmd(t, root, binDir, demoRunTimeout, bin, "up", "--state-dir", stateDir)
	t.Logf("grove-demo up took %s", time.Since(start).Round(time.Second))

	scaled := demoScaledPlaced.FindStringSubmatch(out)
	require.NotNil(t, scaled, "no scaled PodGang placed in one rack in:\n%s", out)
	gang, rack := scaled[1], scaled[2]
	assert.Regexp(t, regexp.MustCompile(`PodGang `+regexp.QuoteMeta(gang)+`  phase=\S+ scheduled=True  in rack `+regexp.QuoteMeta(rack)), out,
		"the tree shows the scaled PodGang in its rack")
	pending := demoPending.FindStringSubmatch(out)
	require.NotNil(t, pending, "no pending gang with a reason in:\n%s", out)
	assert.Equal(t, common.BasePodGangName(demo.TooBig, 0), pending[1])
	assert.Contains(t, out, "reason: "+pending[3], "the tree shows the pending gang's reason")

	// The PodCliqueSet's Ready condition rolled its two gangs up.
	assert.Contains(t, out, "✓ PodCliqueSet "+demo.Workload+" Ready: all 2 PodGangs are scheduled and all 1 replicas are available")
	// kubectl grove why explains the pending gang: every pod exists and is ungated, none is
	// bound, the scheduler's cause (no domain of the required level fits) and message are
	// quoted, and the next action is about the rack it must fit.
	for _, want := range []string{
		"PodGang " + demo.Namespace + "/" + pending[1] + " is not scheduled (phase Pending)",
		"1. pods: " + pending[2] + " exist, 0 bound to nodes, 0 still gated",
		"grove-scheduler: NoDomainFits — " + pending[3],
		"next: free capacity inside one domain of the required level",
	} {
		assert.Contains(t, out, want, "kubectl grove why")
	}
	assert.NotContains(t, out, "carry the scheduling gate", "kubectl grove why: no pod of the pending gang is gated")
	// kubectl grove topology lists the scaled gang inside its rack.
	assert.Regexp(t, regexp.MustCompile(`rack `+regexp.QuoteMeta(rack)+`  nodes=4[^\n]*\n[^\n]*gangs inside: [^\n]*`+
		regexp.QuoteMeta(demo.Namespace+"/"+gang+" ("+scaled[3]+" pods)")), out, "kubectl grove topology")

	// What the demo printed is what the API holds.
	cs := demoClientset(t, filepath.Join(stateDir, "kubeconfig"))
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(demo.Namespace).List(ctx, metav1.ListOptions{LabelSelector: common.LabelPodGang + "=" + gang})
	require.NoError(t, err)
	require.Equal(t, scaled[3], strconv.Itoa(len(pods.Items)), "pods of %s", gang)
	for _, p := range pods.Items {
		node, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err, "pod %s", p.Name)
		assert.Equal(t, rack, node.Labels[framework.RackKey], "pod %s on node %s", p.Name, node.Name)
	}
	pods, err = cs.CoreV1().Pods(demo.Namespace).List(ctx, metav1.ListOptions{LabelSelector: common.LabelPartOfKey + "=" + demo.TooBig})
	require.NoError(t, err)
	assert.Equal(t, pending[2], strconv.Itoa(len(pods.Items)))
	assert.Zero(t, countBound(pods.Items), "pods of %s bound", demo.TooBig)

	// Everything the demo started: its supervisor and the processes the supervisor recorded.
	pids, err := cluster.RecordedPIDs(stateDir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(pids), 6, "etcd, kube-apiserver, kube-controller-manager, kwok, grove-operator, grove-scheduler")
	supervisor := cluster.SupervisorPID(stateDir)
	require.NotZero(t, supervisor)
	pids = append(pids, supervisor)
	for _, pid := range pids {
		require.True(t, running(pid), "pid %d is not running before down", pid)
	}
	demoCmd(t, root, binDir, demoStopTimeout, bin, "down", "--state-dir", stateDir)
	for _, pid := range pids {
		assert.False(t, running(pid), "pid %d survived grove-demo down", pid)
	}
}

// demoCmd runs a command in the module root and fails the test unless it exits 0; it returns
// the combined output.
func demoCmd(t *testing.T, dir, binDir string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := runDemo(dir, binDir, timeout, name, args...)
	require.NoError(t, err, "%s %v:\n%s", name, args, out)
	return out
}

func runDemo(dir, binDir string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GROVE_BIN_DIR="+binDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func demoClientset(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// running reads /proc: a pid that is gone or a zombie (exited, not yet reaped by whoever
// inherited it) runs nothing.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
