//go:build e2einstall

package install

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ai-dynamo/grove/internal/helmchart"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/realnode"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

const (
	release   = "grove"
	namespace = "grove-system"
	nodeName  = "real-node"
	// nodeNameB is the second real node, the one whose kubelet the node-failure step kills.
	nodeNameB  = "real-node-b"
	kwokNodes  = 4
	registry   = "localhost/grove"
	helmDriver = "secret"
)

// env is the suite's environment, shared by the ordered steps of TestInstallLifecycle.
type env struct {
	c        *cluster.Cluster
	node     *realnode.Node
	nodeB    *realnode.Node
	cl       client.Client
	cs       kubernetes.Interface
	dyn      dynamic.Interface
	chartDir string
	// versions are N and N+1: the install and the upgrade.
	versions [2]string
}

var suite *env

// TestMain starts the control plane (advertising this machine's address), kube-scheduler
// (the cluster's default scheduler, which places grove-operator's and grove-scheduler's own
// pods), kwok with kwokNodes simulated nodes, two real nodes, and imports the images of both
// versions into the real nodes' containerd.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	versions := strings.Fields(os.Getenv("GROVE_INSTALL_VERSIONS"))
	imageDir := os.Getenv("GROVE_INSTALL_IMAGE_DIR")
	if len(versions) != 2 || imageDir == "" {
		fmt.Fprintln(os.Stderr, "GROVE_INSTALL_VERSIONS (\"<N> <N+1>\") and GROVE_INSTALL_IMAGE_DIR (<dir>/<version>/*.oci.tar) must be set: run `make e2e-install`")
		return 1
	}
	if err := realnode.Prerequisites(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e, stop, err := start(ctx, versions, imageDir)
	// An interrupted run still removes the node's containers, mounts and iptables rule.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		stop()
		os.Exit(2)
	}()
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the install environment:", err)
		return 1
	}
	suite = e
	code := m.Run()
	if code != 0 {
		if dir := os.Getenv("GROVE_E2E_LOGS"); dir != "" {
			keepLogs(e, dir)
		}
	}
	return code
}

func start(ctx context.Context, versions []string, imageDir string) (*env, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		stops = nil
	}
	hostIP, err := realnode.HostIP()
	if err != nil {
		return nil, stop, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		SkipGroveCRDs:    true, // the chart installs them
		AdvertiseAddress: hostIP,
		APIServerArgs:    realnode.APIServerArgs,
		// The node lifecycle controller turns a node whose kubelet stopped heartbeating
		// Ready=Unknown (and taints it unreachable), as on a real cluster, sooner than its
		// 50s default. kwok renews its nodes' leases every 10s (a quarter of their 40s), so
		// 30s leaves them two missed renewals; taint-based eviction stays off
		// (taint-eviction-controller does not run), so only grove-operator acts on a lost node.
		ExtraControllers:      append(slices.Clone(realnode.Controllers), "node-lifecycle-controller"),
		ControllerManagerArgs: []string{"--node-monitor-grace-period=" + nodeMonitorGrace.String(), "--node-monitor-period=2s"},
	})
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { _ = c.Stop() })
	bin, err := cluster.BinDir()
	if err != nil {
		return nil, stop, err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, stop, err
	}
	if _, err := c.StartProcess("kube-scheduler", filepath.Join(bin, "kube-scheduler"), []string{
		"--kubeconfig=" + c.KubeconfigPath, "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
	}, nil); err != nil {
		return nil, stop, err
	}
	if err := c.StartKwok(ctx); err != nil {
		return nil, stop, err
	}
	// Node B gets its own bridge and pod subnet; both nodes share this machine's address.
	var nodes [2]*realnode.Node
	for i, opts := range []realnode.Options{
		{Name: nodeName, HostIP: hostIP},
		{Name: nodeNameB, HostIP: hostIP, Bridge: "cni1", PodCIDR: "10.244.1.0/24"},
	} {
		node, err := realnode.Start(ctx, c, opts)
		if err != nil {
			return nil, stop, err
		}
		nodes[i] = node
		stops = append(stops, func() {
			if err := node.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the real node %s: %v\n", node.Name, err)
			}
		})
		// Both nodes run the startup waiter, which is grove-operator's image.
		for _, v := range versions {
			for _, name := range []string{"grove-operator", "grove-scheduler"} {
				if err := node.ImportImage(ctx, filepath.Join(imageDir, v, name+".oci.tar")); err != nil {
					return nil, stop, err
				}
			}
		}
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, corev1alpha1.AddToScheme, schedv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, stop, err
		}
	}
	e := &env{c: c, node: nodes[0], nodeB: nodes[1], versions: [2]string{versions[0], versions[1]}}
	if e.cl, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, stop, err
	}
	if e.cs, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, stop, err
	}
	if e.dyn, err = dynamic.NewForConfig(c.Config); err != nil {
		return nil, stop, err
	}
	root, err := cluster.ModuleRoot()
	if err != nil {
		return nil, stop, err
	}
	e.chartDir = filepath.Join(root, helmchart.Dir)
	for i := range kwokNodes {
		n := cluster.FakeNode(fmt.Sprintf("kwok-%d", i), nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi"})
		if err := e.cl.Create(ctx, n); err != nil {
			return nil, stop, err
		}
	}
	return e, stop, nil
}

// helm returns a Helm action configuration for the release namespace, talking to the
// control plane through its kubeconfig, with releases stored as Secrets (Helm's default).
func (e *env) helm(t *testing.T) *action.Configuration {
	t.Helper()
	kubeconfig, ns := e.c.KubeconfigPath, namespace
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, namespace, helmDriver); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitStrategy makes install and upgrade return once every Deployment is rolled out and
// Ready, as `helm install --wait=watcher` does.
const waitStrategy = kube.StatusWatcherStrategy

// keepLogs copies the control plane's, the node's and the containers' logs to dir.
func keepLogs(e *env, dir string) {
	dst := filepath.Join(dir, "install")
	_ = os.MkdirAll(dst, 0o755)
	logs, _ := filepath.Glob(filepath.Join(e.c.Dir, "*.log"))
	containerLogs, _ := filepath.Glob(filepath.Join(e.node.PodLogDir, "*", "*", "*.log"))
	if e.nodeB != nil {
		logsB, _ := filepath.Glob(filepath.Join(e.nodeB.PodLogDir, "*", "*", "*.log"))
		containerLogs = append(containerLogs, logsB...)
	}
	for _, f := range append(logs, containerLogs...) {
		if data, err := os.ReadFile(f); err == nil {
			rel := strings.ReplaceAll(strings.TrimPrefix(f, filepath.Dir(filepath.Dir(filepath.Dir(f)))+"/"), "/", "_")
			if strings.HasPrefix(f, e.c.Dir) {
				rel = filepath.Base(f)
			}
			_ = os.WriteFile(filepath.Join(dst, rel), data, 0o644)
		}
	}
	fmt.Fprintln(os.Stderr, "logs kept in", dst)
}
