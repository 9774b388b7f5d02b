// Package realnode runs real Kubernetes nodes next to the local control plane of
// internal/testenv/cluster: a kubelet built from the pinned Kubernetes module, containerd,
// runc and the CNI bridge plugin from the distribution's packages, all with private
// configuration and state under one directory that Stop removes. Pods bound to the node
// really run: images are imported into the node's containerd (nothing is pulled), init
// containers execute, probes are probed.
//
// Two nodes can run side by side on one machine: each has its own containerd (socket, root,
// state), kubelet (ports, root dir, hostname) and CNI bridge with its own pod subnet
// (Options.Bridge, Options.PodCIDR). Both share the machine's address as their InternalIP.
//
// The machine needs containerd, ctr, runc, the CNI plugins, busybox (static) and iptables;
// `make realnode-deps` installs them. The control plane must advertise a non-loopback
// address (cluster.Options.AdvertiseAddress, see Options) so that pods reach it.
//
// No kube-proxy runs: the node installs the one rule kube-proxy would install for the
// default/kubernetes Service (its ClusterIP to the apiserver's endpoint), which is the only
// Service pods of the install tests dial. The apiserver reaches webhook Services through
// their endpoints (--enable-aggregator-routing, see APIServerArgs).
package realnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

const (
	// PodCIDR is the pod network of a node started without Options.PodCIDR (CNI bridge
	// cni0, host-local IPAM).
	PodCIDR = "10.244.0.0/24"
	// KubernetesServiceIP is the ClusterIP of default/kubernetes: the first address of the
	// control plane's service range (10.96.0.0/16).
	KubernetesServiceIP = "10.96.0.1"
	// PauseImage is the pod sandbox image, built from busybox by Start.
	PauseImage = "localhost/grove-e2e/pause:busybox"
	// BusyboxImage holds a static busybox at /bin/busybox (and /bin/sh); workloads of the
	// install tests run it.
	BusyboxImage = "localhost/grove-e2e/busybox:static"
	// bridgeName is the CNI bridge of a node started without Options.Bridge; the host is the
	// pod network's gateway on it.
	bridgeName = "cni0"
	// bridgePrefix starts the name of every node's bridge (HostIP skips them).
	bridgePrefix = "cni"
	// ruleComment starts the comment of a node's iptables rule, followed by
	// /<node>/<owner pid>, so that Stop removes exactly its rule and Start only rules of dead
	// runs.
	ruleComment = "grove-realnode-kubernetes-service"
)

// APIServerArgs are the kube-apiserver flags a control plane with a real node needs: the
// apiserver dials webhook (and conversion) Services at their endpoints, since no kube-proxy
// makes ClusterIPs routable on this machine, and kubelets (logs, exec) at their InternalIP,
// since no DNS resolves node names here.
var APIServerArgs = []string{"--enable-aggregator-routing=true", "--kubelet-preferred-address-types=InternalIP,Hostname"}

// Controllers are the kube-controller-manager controllers a real node's pods need besides
// the cluster's defaults: Deployments, the kube-root-ca.crt ConfigMap every service-account
// volume mounts, token Secrets, and the endpoints the apiserver routes webhooks to.
var Controllers = []string{
	"deployment-controller", "replicaset-controller",
	"root-ca-certificate-publisher-controller", "serviceaccount-token-controller",
	"endpoints-controller", "endpointslice-controller",
}

// Options configures a node.
type Options struct {
	// Name of the Node; "real-node" when empty.
	Name string
	// Dir holds every configuration and state file; a temporary directory when empty.
	Dir string
	// KubeletPath is the kubelet binary; <cluster.BinDir()>/kubelet when empty.
	KubeletPath string
	// HostIP is the node's address and the apiserver's advertised address; HostIP() when empty.
	HostIP string
	// Bridge is the CNI bridge, "cni0" when empty; a second node on the machine needs its own
	// (e.g. "cni1").
	Bridge string
	// PodCIDR is the node's pod subnet, PodCIDR when empty; a second node on the machine needs
	// its own (e.g. "10.244.1.0/24").
	PodCIDR string
}

// Node is a running real node.
type Node struct {
	Name string
	Dir  string
	// HostIP is the node's InternalIP.
	HostIP string
	// Socket is containerd's address.
	Socket string
	// PodLogDir holds the containers' logs (<namespace>_<pod>_<uid>/<container>/<n>.log).
	PodLogDir string
	// Bridge and PodCIDR are the node's pod network.
	Bridge, PodCIDR string

	c                   *cluster.Cluster
	containerd, kubelet *cluster.Process
	ruleArgs            []string
	tempDir             bool
}

// HostIP returns the first global IPv4 address of this machine that is not on the CNI bridge.
func HostIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || strings.HasPrefix(iface.Name, bridgePrefix) ||
			strings.HasPrefix(iface.Name, "veth") {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("realnode: this machine has no non-loopback IPv4 address")
}

// Prerequisites reports the programs a node needs that this machine lacks.
func Prerequisites() error {
	var missing []string
	for _, p := range []string{"containerd", "ctr", "runc", "iptables", "ip"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, p := range []string{cniBinDir + "/bridge", cniBinDir + "/host-local", cniBinDir + "/loopback", busyboxPath} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("realnode: missing %s (run `make realnode-deps`)", strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		return errors.New("realnode: a real node needs root (containerd, runc, iptables)")
	}
	return nil
}

const (
	cniBinDir   = "/usr/lib/cni"
	busyboxPath = "/bin/busybox"
)

// Start brings up containerd and a kubelet registered with c, waits until the Node is Ready,
// and routes the kubernetes Service for pods. c must have been started with
// AdvertiseAddress = HostIP, APIServerArgs and Controllers. On error everything started is
// stopped again.
func Start(ctx context.Context, c *cluster.Cluster, opts Options) (n *Node, err error) {
	if err := Prerequisites(); err != nil {
		return nil, err
	}
	n = &Node{Name: opts.Name, Dir: opts.Dir, HostIP: opts.HostIP, Bridge: opts.Bridge, PodCIDR: opts.PodCIDR, c: c}
	if n.Name == "" {
		n.Name = "real-node"
	}
	if n.Bridge == "" {
		n.Bridge = bridgeName
	}
	if n.PodCIDR == "" {
		n.PodCIDR = PodCIDR
	}
	if !strings.HasPrefix(n.Bridge, bridgePrefix) {
		return nil, fmt.Errorf("realnode: bridge %q must start with %q", n.Bridge, bridgePrefix)
	}
	if n.HostIP == "" {
		if n.HostIP, err = HostIP(); err != nil {
			return nil, err
		}
	}
	if n.Dir == "" {
		if n.Dir, err = os.MkdirTemp("", "grove-realnode-"); err != nil {
			return nil, err
		}
		n.tempDir = true
	}
	defer func() {
		if err != nil {
			tail := n.LogTail(30)
			_ = n.Stop()
			err = fmt.Errorf("%w\n%s", err, tail)
		}
	}()
	kubelet := opts.KubeletPath
	if kubelet == "" {
		dir, err := cluster.BinDir()
		if err != nil {
			return n, err
		}
		kubelet = filepath.Join(dir, "kubelet")
	}
	if _, err := os.Stat(kubelet); err != nil {
		return n, fmt.Errorf("realnode: kubelet binary: %w (run `make realnode-bins`)", err)
	}
	// A run that died (a panicking test skips every cleanup) left its containers, mounts,
	// state and bridge behind; its bridge carries addresses of pods long gone.
	removeStaleNodes()
	_ = exec.Command("ip", "link", "delete", n.Bridge).Run()
	if err := os.WriteFile(n.path(ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return n, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	if err := n.importBusyboxImages(ctx); err != nil {
		return n, err
	}
	if err := n.routeKubernetesService(ctx); err != nil {
		return n, err
	}
	if err := n.startKubelet(ctx, kubelet); err != nil {
		return n, err
	}
	return n, nil
}

func (n *Node) path(parts ...string) string {
	return filepath.Join(append([]string{n.Dir}, parts...)...)
}

func (n *Node) startContainerd(ctx context.Context) error {
	n.Socket = n.path("containerd.sock")
	for _, d := range []string{"containerd/root", "containerd/state", "cni/net.d", "cni/ipam", "runc"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}
	// restrict_oom_score_adj: the sandbox forbids lowering oom_score_adj, and runc then fails
	// creating every container.
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[5]q
    conf_dir = %[6]q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = %[7]q
`, n.path("containerd/root"), n.path("containerd/state"), n.Socket, PauseImage, cniBinDir, n.path("cni/net.d"), n.path("runc"))
	if err := os.WriteFile(n.path("containerd.toml"), []byte(config), 0o644); err != nil {
		return err
	}
	conflist := fmt.Sprintf(`{"cniVersion":"0.4.0","name":"grove-%s","plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
`, n.Bridge, n.Bridge, n.path("cni/ipam"), n.PodCIDR)
	if err := os.WriteFile(n.path("cni/net.d/10-grove.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	path, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	if n.containerd, err = n.c.StartProcess("realnode-containerd-"+n.Name, path, []string{"--config", n.path("containerd.toml")}, nil); err != nil {
		return err
	}
	return n.poll(ctx, n.containerd, time.Minute, func(ctx context.Context) (bool, error) {
		return n.ctr(ctx, "version") == nil, nil
	})
}

// ctr runs `ctr -n k8s.io <args>` against the node's containerd.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.Socket, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// ImportImage loads an image tarball (OCI layout or docker archive) into the node's
// containerd under the name the tarball carries (io.containerd.image.name); pods use it with
// imagePullPolicy IfNotPresent or Never.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	return n.ctr(ctx, "images", "import", "--all-platforms", tarball)
}

// TagImage gives an imported image another name, as a registry push of the same image
// under a second tag would.
func (n *Node) TagImage(ctx context.Context, src, dst string) error {
	return n.ctr(ctx, "images", "tag", "--force", src, dst)
}

func (n *Node) startKubelet(ctx context.Context, path string) error {
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	healthz, err := cluster.FreePort()
	if err != nil {
		return err
	}
	n.PodLogDir = n.path("pod-logs")
	// A test node: anonymous access with AlwaysAllow on loopback-bound ports; cgroup v1
	// accepted; no QoS cgroups, eviction or image GC that would fight the tests.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: false
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerRuntimeEndpoint: unix://%[4]s
podLogsDir: %[5]s
serializeImagePulls: false
resolvConf: ""
registerNode: true
maxPods: 60
`, n.HostIP, port, healthz, n.Socket, n.PodLogDir)
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	args := []string{
		"--config=" + n.path("kubelet.yaml"),
		"--kubeconfig=" + n.c.KubeconfigPath,
		"--root-dir=" + n.path("kubelet"),
		"--cert-dir=" + n.path("kubelet", "pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.HostIP,
		"--v=1",
	}
	if n.kubelet, err = n.c.StartProcess("realnode-kubelet-"+n.Name, path, args, nil); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(n.c.Config)
	if err != nil {
		return err
	}
	return n.poll(ctx, n.kubelet, 2*time.Minute, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// routeKubernetesService makes the kubernetes Service's ClusterIP reach the apiserver from
// pods, as kube-proxy would: DNAT from the pod network to the advertised endpoint.
func (n *Node) routeKubernetesService(ctx context.Context) error {
	u := strings.TrimPrefix(n.c.APIServerURL, "https://")
	host, port, err := net.SplitHostPort(u)
	if err != nil {
		return err
	}
	if host != n.HostIP {
		return fmt.Errorf("realnode: the apiserver advertises %s, not the node's address %s (set cluster.Options.AdvertiseAddress)", host, n.HostIP)
	}
	comment := fmt.Sprintf("%s/%s/%d", ruleComment, n.Name, os.Getpid())
	n.ruleArgs = []string{"-t", "nat", "PREROUTING", "-s", n.PodCIDR, "-d", KubernetesServiceIP, "-p", "tcp", "--dport", "443",
		"-m", "comment", "--comment", comment, "-j", "DNAT", "--to-destination", net.JoinHostPort(host, port)}
	// Rules of an earlier run that died point at a port nobody listens on any more.
	removeStaleRules(comment)
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, insertArgs(n.ruleArgs)...)...).CombinedOutput()
	if err != nil {
		n.ruleArgs = nil
		return fmt.Errorf("realnode: iptables: %w: %s", err, out)
	}
	return nil
}

func insertArgs(rule []string) []string { return append([]string{rule[0], rule[1], "-A"}, rule[2:]...) }
func deleteArgs(rule []string) []string { return append([]string{rule[0], rule[1], "-D"}, rule[2:]...) }

// removeStaleRules deletes the rules of nodes whose owner process is gone, and own, this
// node's earlier rule: the rules of other live nodes stay.
func removeStaleRules(own string) {
	out, err := exec.Command("iptables", "-w", "-t", "nat", "-S", "PREROUTING").Output()
	if err != nil {
		return
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, ruleComment) || !strings.HasPrefix(line, "-A ") {
			continue
		}
		fields := strings.Fields(strings.Replace(line, "-A ", "-D ", 1))
		for i, f := range fields {
			fields[i] = strings.Trim(f, `"`)
		}
		if i := slices.Index(fields, "--comment"); i >= 0 && i+1 < len(fields) && fields[i+1] != own && ruleOwnerAlive(fields[i+1]) {
			continue
		}
		_ = exec.Command("iptables", append([]string{"-w", "-t", "nat"}, fields...)...).Run()
	}
}

// ruleOwnerAlive reports whether the process named at the end of a rule's comment
// (<ruleComment>/<node>/<pid>) still runs; rules without an owner are an older run's.
func ruleOwnerAlive(comment string) bool {
	pid, err := strconv.Atoi(comment[strings.LastIndexByte(comment, '/')+1:])
	return err == nil && cluster.ProcessAlive(pid)
}

func (n *Node) poll(ctx context.Context, p *cluster.Process, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("%s exited: %v", filepath.Base(p.LogPath()), err)
		}
		return cond(ctx)
	})
}

// LogTail returns the last lines of containerd's and the kubelet's logs.
func (n *Node) LogTail(lines int) string {
	var b strings.Builder
	for _, p := range []*cluster.Process{n.containerd, n.kubelet} {
		if p == nil {
			continue
		}
		data, err := os.ReadFile(p.LogPath())
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(p.LogPath()), strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
	return b.String()
}

// KillKubelet kills the node's kubelet (SIGKILL) and leaves everything else running, as when
// a kubelet crashes or its node is cut off from the control plane: the node stops
// heartbeating, its containers keep running on containerd, and nobody reports their status.
// Stop still removes them.
func (n *Node) KillKubelet() error {
	if n.kubelet == nil {
		return errors.New("realnode: the kubelet was never started")
	}
	return n.kubelet.Kill()
}

// Stop kills every container of the node, stops the kubelet and containerd, removes the
// iptables rule, the bridge and every mount under Dir, and (when temporary) Dir itself.
func (n *Node) Stop() error {
	var errs []error
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.Stop(10*time.Second))
	}
	if n.containerd != nil {
		if exited, _ := n.containerd.Exited(); !exited {
			n.killContainers()
		}
		errs = append(errs, n.containerd.Stop(10*time.Second))
	}
	n.killShims()
	if n.ruleArgs != nil {
		if out, err := exec.Command("iptables", append([]string{"-w"}, deleteArgs(n.ruleArgs)...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables: %w: %s", err, out))
		}
		n.ruleArgs = nil
	}
	if n.Bridge != "" {
		_ = exec.Command("ip", "link", "delete", n.Bridge).Run()
	}
	if n.Dir != "" {
		errs = append(errs, unmountUnder(n.Dir))
		if n.tempDir {
			errs = append(errs, os.RemoveAll(n.Dir))
		}
	}
	return errors.Join(errs...)
}

// ownerFile in a node's Dir holds the pid of the process that started the node.
const ownerFile = "owner.pid"

// removeStaleNodes removes the temporary directories of nodes whose owner process is gone:
// their shims and containers are killed and their mounts undone first.
func removeStaleNodes() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "grove-realnode-*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err != nil || cluster.ProcessAlive(pid) {
			continue
		}
		stale := &Node{Dir: dir, Socket: filepath.Join(dir, "containerd.sock")}
		stale.killShims()
		if unmountUnder(dir) == nil {
			_ = os.RemoveAll(dir)
		}
	}
}

// killContainers SIGKILLs every task of the node's containerd and waits for them to go:
// container processes are children of the shims, not of containerd, and would outlive it.
func (n *Node) killContainers() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.Socket, "--namespace", "k8s.io", "tasks", "ls", "-q").Output()
	if err != nil {
		return
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		_ = n.ctr(ctx, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
	}
	for _, id := range ids {
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			return n.ctr(ctx, "tasks", "delete", id) == nil, nil
		})
	}
}

// killShims kills the containerd shims serving this node's containerd (they name its socket
// in their arguments), which are left behind when containerd stops, and every process below
// them (the containers of a run that died before it could stop them).
func (n *Node) killShims() {
	for _, pid := range n.shimTree() {
		_ = syscall.Kill(pid, syscall.SIGSTOP) // no new children while the tree dies
	}
	for _, pid := range n.shimTree() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// shimTree lists the shims of this node's containerd and every process below them.
func (n *Node) shimTree() []int {
	if n.Socket == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	var shims []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid := parentPID(pid); ppid > 0 {
			children[ppid] = append(children[ppid], pid)
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && args[i+1] == n.Socket {
				shims = append(shims, pid)
			}
		}
	}
	var tree []int
	var walk func(pid int)
	walk = func(pid int) {
		tree = append(tree, pid)
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, pid := range shims {
		walk(pid)
	}
	return tree
}

// parentPID reads a process's parent from /proc/<pid>/stat (0 when it is gone).
func parentPID(pid int) int {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: the fields follow the last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// unmountUnder lazily unmounts every mount point below dir, deepest first (container
// root filesystems, volumes of pods).
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
