// Command operator is `make bench-operator`: how long grove-operator takes to turn
// PodCliqueSets into pods, PodGangs and lifted gates, and a user waits from apply to running
// pods, against two baselines measured in the same run — the same pods created directly by a
// client at the operator's QPS/burst (bound by grove-scheduler), and a Deployment of the same
// size placed by kube-scheduler's default profile. Everything runs as local processes: etcd,
// kube-apiserver (with an audit log of the operator's requests), kube-controller-manager
// (with the Deployment and ReplicaSet controllers at the operator's QPS/burst), kwok,
// grove-operator with its shipped configuration, grove-scheduler and kube-scheduler.
//
// BENCH_OPERATOR_SCALE=small runs every workload at a tenth of its size.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/operator/app"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func main() {
	out := flag.String("out", "results/operator", "directory of results.json and RESULTS.md (a relative path is under the module root)")
	scratch := flag.String("scratch", "results/tmp/operator", "directory of the CPU profiles and the audit log (a relative path is under the module root)")
	command := flag.String("command", "make bench-operator", "the command recorded in RESULTS.md")
	flag.Parse()
	scale, ok := scales[cmp.Or(os.Getenv("BENCH_OPERATOR_SCALE"), "full")]
	if !ok {
		fmt.Fprintf(os.Stderr, "BENCH_OPERATOR_SCALE must be full or small\n")
		os.Exit(2)
	}
	crlog.SetLogger(logr.Discard())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, scale, *out, *scratch, *command)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-operator: %v\n", err)
		os.Exit(1)
	}
}

type bench struct {
	scale     Scale
	env       *framework.Env
	admin     client.Client
	cache     cache.Cache
	cs        kubernetes.Interface
	qps       float32
	burst     int
	pprofAddr string
	auditLog  string
	results   []*Result
	scratch   string
}

// underRoot is path, relative to the module root unless it is absolute.
func underRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

func run(ctx context.Context, scale Scale, outDir, scratch, command string) error {
	root, err := cluster.ModuleRoot()
	if err != nil {
		return err
	}
	outDir, scratch = underRoot(root, outDir), underRoot(root, scratch)
	for _, d := range []string{outDir, scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	shipped, err := os.ReadFile(filepath.Join(root, "config", "operator", "operator-config.yaml"))
	if err != nil {
		return err
	}
	shippedCfg, err := configv1alpha1.Decode(shipped)
	if err != nil {
		return err
	}
	b := &bench{scale: scale, qps: shippedCfg.ClientConnection.QPS, burst: int(shippedCfg.ClientConnection.Burst), scratch: scratch}

	dir, err := os.MkdirTemp("", "grove-bench-operator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	policy := filepath.Join(dir, "audit-policy.yaml")
	operatorUser := "system:serviceaccount:" + framework.Namespace + ":" + framework.OperatorServiceAccount
	if err := os.WriteFile(policy, fmt.Appendf(nil, auditPolicy, operatorUser), 0o644); err != nil {
		return err
	}
	// The audit log stays in the scratch directory after the run, for reading request by request.
	b.auditLog = filepath.Join(scratch, "audit.log")
	if err := os.Remove(b.auditLog); err != nil && !os.IsNotExist(err) {
		return err
	}
	pprofPort, err := cluster.FreePort()
	if err != nil {
		return err
	}
	b.pprofAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(pprofPort))
	fmt.Printf(">> starting the control plane, kwok, grove-operator, grove-scheduler and kube-scheduler (%s scale, %d nodes)\n", scale.Name, scale.Nodes)
	schedulerConfig, err := singleScheduler(root, dir)
	if err != nil {
		return err
	}
	b.env, err = framework.Start(ctx, framework.Options{
		SchedulerConfigFile: schedulerConfig,
		Cluster: cluster.Options{
			Dir: filepath.Join(dir, "cluster"),
			APIServerArgs: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + b.auditLog,
				"--audit-log-format=json", "--audit-log-maxsize=0",
				// The rollout's kube-apiserver profile (the test clusters turn profiling off).
				"--profiling=true"},
			ExtraControllers: []string{"deployment-controller", "replicaset-controller"},
			// The Deployment baseline's controllers get the operator's client budget.
			ControllerManagerArgs: []string{fmt.Sprintf("--kube-api-qps=%g", b.qps), fmt.Sprintf("--kube-api-burst=%d", b.burst)},
		},
		// The shipped configuration, plus the profiling endpoint the benchmark reads.
		OperatorConfig: func(cfg *configv1alpha1.OperatorConfiguration) {
			cfg.Debugging = &configv1alpha1.DebuggingConfiguration{EnableProfiling: ptr.To(true), PprofBindAddress: ptr.To(b.pprofAddr)}
			// One instance, no leader election: on a machine the benchmark saturates, a lease
			// renewal can miss its deadline and the operator would exit mid-workload.
			cfg.LeaderElection.Enabled = false
			// The recovery rows fail nodes: a short grace, and no back-off carried between rounds.
			cfg.NodeFailure.Grace = metav1.Duration{Duration: nodeFailureGrace}
			cfg.NodeFailure.InitialBackOff = metav1.Duration{Duration: nodeFailureBackOff}
		},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := b.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "bench-operator: stopping the environment: %v\n", err)
		}
	}()
	b.admin, b.cs = b.env.Client, b.env.Clientset
	if err := b.startKubeScheduler(ctx); err != nil {
		return err
	}
	if _, err := b.env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: scale.Nodes / 10, HostsPerRack: 10}, framework.NodeShape); err != nil {
		return err
	}
	scheme, err := app.Scheme()
	if err != nil {
		return err
	}
	if b.cache, err = cache.New(b.env.Cluster.Config, cache.Options{Scheme: scheme}); err != nil {
		return err
	}
	go func() { _ = b.cache.Start(ctx) }()
	if !b.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("the benchmark's cache did not sync")
	}
	for _, l := range []client.ObjectList{&corev1.PodList{}, &schedv1alpha1.PodGangList{}, &corev1alpha1.PodCliqueSetList{}} {
		if err := b.cache.List(ctx, l); err != nil {
			return err
		}
	}

	if err := b.workloads(ctx); err != nil {
		// Report what was measured so far; the workload's error is the one to return.
		return errors.Join(err, b.report(ctx, outDir, command))
	}
	return b.report(ctx, outDir, command)
}

// singleScheduler is the shipped KubeSchedulerConfiguration of grove-scheduler without leader
// election: one instance, which must not lose a lease (the e2e framework shortens it for its
// restart scenarios) to a machine busy with the benchmark.
func singleScheduler(root, dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "config", "scheduler", "scheduler-config.yaml"))
	if err != nil {
		return "", err
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", err
	}
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
	}
	le["leaderElect"] = false
	cfg["leaderElection"] = le
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "grove-scheduler-config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

// startKubeScheduler runs kube-scheduler with its default profile (schedulerName
// default-scheduler) for the Deployment baseline.
func (b *bench) startKubeScheduler(ctx context.Context) error {
	bin, err := cluster.BinDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(bin, "kube-scheduler")); err != nil {
		return fmt.Errorf("kube-scheduler not found in %s: run `make realnode-bins`", bin)
	}
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection:\n  kubeconfig: %s\nleaderElection:\n  leaderElect: false\n", b.env.Cluster.KubeconfigPath)
	path := filepath.Join(b.env.Cluster.Dir, "kube-scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := b.env.Cluster.StartProcess("kube-scheduler", filepath.Join(bin, "kube-scheduler"), []string{
		"--config=" + path, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--authentication-kubeconfig=" + b.env.Cluster.KubeconfigPath, "--authorization-kubeconfig=" + b.env.Cluster.KubeconfigPath,
		"--authorization-always-allow-paths=/healthz", "--v=1",
	}, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe
	deadline := time.Now().Add(90 * time.Second)
	for {
		if done, perr := p.Exited(); done {
			return fmt.Errorf("kube-scheduler exited: %v", perr)
		}
		if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-scheduler not healthy after 90s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Result is one measured workload.
type Result struct {
	Name string `json:"name"`
	// Kind is grove, raw or deployment.
	Kind string `json:"kind"`
	Pods int    `json:"pods"`
	// Milestones are seconds from the change to each milestone (missing: not reached).
	Milestones map[string]float64 `json:"milestones"`
	Order      []string           `json:"order"`
	Error      string             `json:"error,omitempty"`
	// OperatorCPUSeconds is grove-operator's CPU time during the workload.
	OperatorCPUSeconds float64 `json:"operatorCPUSeconds"`
	// OperatorRequests/Writes count grove-operator's API requests (audit log) during the workload.
	OperatorRequests int            `json:"operatorRequests"`
	OperatorWrites   int            `json:"operatorWrites"`
	ByResourceVerb   map[string]int `json:"byResourceVerb,omitempty"`
	// APIServerRequests counts every client's requests to kube-apiserver during the workload
	// (its apiserver_request_total, watches included): the operator's, the schedulers', kwok's,
	// kube-controller-manager's and the benchmark's own.
	APIServerRequests int `json:"apiserverRequests"`
	// CPUByProcess is the CPU seconds each process of the control plane used during the
	// workload, by executable name (clusterCPU).
	CPUByProcess map[string]float64 `json:"cpuByProcess,omitempty"`
	// BenchmarkCPUSeconds is this process's CPU time during the workload: its informers and
	// its polls share the machine's cores with the control plane.
	BenchmarkCPUSeconds float64   `json:"benchmarkCPUSeconds,omitempty"`
	Start               time.Time `json:"start"`
	End                 time.Time `json:"end"`
	// PlacementScoreBefore/After are the PodGangs' mean placement score around a rollout (nil:
	// none has one).
	PlacementScoreBefore *float64 `json:"placementScoreBefore,omitempty"`
	PlacementScoreAfter  *float64 `json:"placementScoreAfter,omitempty"`
	// PlacementScoreMinBefore/After are the lowest PodGang placement score around a rollout.
	PlacementScoreMinBefore *float64 `json:"placementScoreMinBefore,omitempty"`
	PlacementScoreMinAfter  *float64 `json:"placementScoreMinAfter,omitempty"`
	// PlacementScoredGangs is how many PodGangs had a placement score after the rollout.
	PlacementScoredGangs int `json:"placementScoredGangs,omitempty"`
	// Timeline is the tracker's progress counts once a second (pods fresh, ungated, bound, ...).
	Timeline []string `json:"timeline,omitempty"`
	// Stages is a rollout's time per PodGang, step by step (stages.go).
	Stages *RolloutStages `json:"stages,omitempty"`
	// Recovery is a node-failure round's per-replica figures; its milestones run from the
	// nodes' Ready transition to the last affected replica's.
	Recovery *Recovery `json:"recovery,omitempty"`
}

func (b *bench) measure(ctx context.Context, name, kind string, pods int, milestones []string, e expectation, timeout time.Duration, change func(context.Context) error) error {
	pid := b.env.Operator.PID()
	cpu0, _ := cpuSeconds(pid)
	all0 := clusterCPU(b.env.Cluster.Dir)
	self0, _ := cpuSeconds(os.Getpid())
	req0, _ := b.apiserverRequests(ctx)
	r := &Result{Name: name, Kind: kind, Pods: pods, Order: milestones, Milestones: map[string]float64{}, Start: time.Now()}
	b.results = append(b.results, r)
	fmt.Printf(">> %s (%d pods)\n", name, pods)
	errc := make(chan error, 1)
	go func() { errc <- change(ctx) }()
	got, err := track(ctx, b.cache, e, milestones, r.Start, timeout, &r.Timeline)
	if cerr := <-errc; cerr != nil && err == nil {
		err = cerr
	}
	r.End = time.Now()
	cpu1, _ := cpuSeconds(pid)
	r.OperatorCPUSeconds = cpu1 - cpu0
	r.CPUByProcess = map[string]float64{}
	for name, s := range clusterCPU(b.env.Cluster.Dir) {
		r.CPUByProcess[name] = s - all0[name]
	}
	if self1, err := cpuSeconds(os.Getpid()); err == nil {
		r.BenchmarkCPUSeconds = self1 - self0
	}
	if req1, err := b.apiserverRequests(ctx); err == nil {
		r.APIServerRequests = req1 - req0
	}
	for m, d := range got {
		r.Milestones[m] = d.Seconds()
	}
	line := []string{}
	for _, m := range milestones {
		if d, ok := got[m]; ok {
			line = append(line, fmt.Sprintf("%s %.1fs", m, d.Seconds()))
		}
	}
	fmt.Printf("   %s\n", strings.Join(line, ", "))
	if os.Getenv("BENCH_OPERATOR_TIMELINE") != "" {
		for _, sample := range r.Timeline {
			fmt.Printf("     %s\n", sample)
		}
	}
	if err != nil {
		r.Error = err.Error()
		fmt.Printf("   error: %v\n", err)
	}
	return err
}

const groveTimeout = 5 * time.Minute

// workloadGroups are the groups of workloads BENCH_OPERATOR_WORKLOADS selects (all by default).
var workloadGroups = []string{"replicas", "disagg", "small", "recovery"}

// selected reads BENCH_OPERATOR_WORKLOADS, a comma-separated subset of workloadGroups.
func selected() (map[string]bool, error) {
	env := os.Getenv("BENCH_OPERATOR_WORKLOADS")
	out := map[string]bool{}
	if env == "" {
		for _, g := range workloadGroups {
			out[g] = true
		}
		return out, nil
	}
	for _, g := range strings.Split(env, ",") {
		if !slices.Contains(workloadGroups, g) {
			return nil, fmt.Errorf("BENCH_OPERATOR_WORKLOADS: unknown group %q (want some of %s)", g, strings.Join(workloadGroups, ","))
		}
		out[g] = true
	}
	return out, nil
}

func (b *bench) workloads(ctx context.Context) error {
	s := b.scale
	n := int(2 * s.Replicas)
	groups, err := selected()
	if err != nil {
		return err
	}
	var sizes []int
	if groups["replicas"] {
		sizes = append(sizes, n, n/2)
	}
	if groups["disagg"] {
		sizes = append(sizes, s.disaggPods())
		if err := b.deploymentRollout(ctx, s.disaggPods()); err != nil {
			return err
		}
	}
	if groups["small"] {
		sizes = append(sizes, 5*s.SmallSets)
	}
	seen := map[int]bool{}
	for _, size := range sizes {
		if seen[size] {
			continue
		}
		seen[size] = true
		if err := b.rawBaseline(ctx, size); err != nil {
			return err
		}
		if err := b.deploymentBaseline(ctx, size); err != nil {
			return err
		}
	}

	if groups["replicas"] {
		if err := b.replicasWorkloads(ctx); err != nil {
			return err
		}
	}
	if groups["disagg"] {
		if err := b.disaggWorkloads(ctx); err != nil {
			return err
		}
	}
	if groups["small"] {
		if err := b.smallWorkloads(ctx); err != nil {
			return err
		}
	}
	if groups["recovery"] {
		return b.recoveryWorkloads(ctx)
	}
	return nil
}

// smallWorkloads are many small PodCliqueSets at once.
func (b *bench) smallWorkloads(ctx context.Context) error {
	s := b.scale
	ns := "pcs-small"
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	sn := 5 * s.SmallSets
	if err := b.measure(ctx, fmt.Sprintf("apply %d small PCS at once", s.SmallSets), "grove", sn, growMilestones,
		expectation{ns: ns, want: sn, grove: true}, groveTimeout, func(ctx context.Context) error {
			return parallel(ctx, s.SmallSets, 16, func(ctx context.Context, i int) error { return b.admin.Create(ctx, smallPCS(ns, i)) })
		}); err != nil {
		return err
	}
	return b.deletePCS(ctx, ns, sn, fmt.Sprintf("delete %d small PCS", s.SmallSets))
}

// replicasWorkloads is upstream's scale test: replicas × 2 pods, then scaled in and out.
func (b *bench) replicasWorkloads(ctx context.Context) error {
	s := b.scale
	n := int(2 * s.Replicas)
	ns := "pcs-replicas"
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	pcs := replicatedPCS(ns, "scale", s.Replicas)
	profile := b.profile(ctx, 40*time.Second, applyProfile)
	if err := b.measure(ctx, fmt.Sprintf("apply PCS %d×2", s.Replicas), "grove", n, growMilestones,
		expectation{ns: ns, want: n, grove: true}, groveTimeout, func(ctx context.Context) error { return b.admin.Create(ctx, pcs) }); err != nil {
		return err
	}
	if err := b.noop(ctx, ns, "scale"); err != nil {
		return err
	}
	half := s.Replicas / 2
	for _, step := range []struct{ from, to int32 }{{s.Replicas, half}, {half, s.Replicas}, {s.Replicas, 0}, {0, s.Replicas}} {
		if err := b.scalePCS(ctx, ns, "scale", step.from, step.to); err != nil {
			return err
		}
	}
	if err := b.deletePCS(ctx, ns, n, "delete PCS"); err != nil {
		return err
	}
	if err := <-profile; err != nil {
		fmt.Printf("   CPU profile: %v\n", err)
	}
	return nil
}

// disaggWorkloads is disaggregated serving: one replica, router + prefill/decode scaling
// groups, applied, updated and deleted.
func (b *bench) disaggWorkloads(ctx context.Context) error {
	s := b.scale
	ns := "pcs-disagg"
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	dn := s.disaggPods()
	if err := b.topology(ctx); err != nil {
		return err
	}
	disagg := disaggPCS(ns, "disagg", s)
	if err := b.measure(ctx, fmt.Sprintf("apply disaggregated PCS (%d scaling-group replicas)", s.Prefill+s.Decode), "grove", dn, growMilestones,
		expectation{ns: ns, want: dn, grove: true}, groveTimeout, func(ctx context.Context) error { return b.admin.Create(ctx, disagg) }); err != nil {
		return err
	}
	if err := b.noop(ctx, ns, "disagg"); err != nil {
		return err
	}
	profile := b.profile(ctx, 40*time.Second, rollingUpdateProfile)
	if err := b.rollDisagg(ctx, ns, "disagg", dn, nil, "2"); err != nil {
		return err
	}
	if err := <-profile; err != nil {
		fmt.Printf("   CPU profile: %v\n", err)
	}
	apiserverProfile := b.profileAPIServer(ctx, 40*time.Second, apiserverRollingUpdateProfile)
	quarterProfile := b.profile(ctx, 40*time.Second, quarterRolloutProfile)
	if err := b.rollDisagg(ctx, ns, "disagg", dn, ptr.To(intstr.FromString("25%")), "3"); err != nil {
		return err
	}
	if err := <-apiserverProfile; err != nil {
		fmt.Printf("   kube-apiserver CPU profile: %v\n", err)
	}
	if err := <-quarterProfile; err != nil {
		fmt.Printf("   CPU profile: %v\n", err)
	}
	return b.deletePCS(ctx, ns, dn, "delete disaggregated PCS")
}

func (b *bench) namespace(ctx context.Context, ns string) error {
	return b.env.Cluster.CreateNamespace(ctx, ns)
}

func (b *bench) podUIDs(ctx context.Context, ns string) (map[types.UID]bool, error) {
	pods := &corev1.PodList{}
	if err := b.cache.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[types.UID]bool{}
	for i := range pods.Items {
		out[pods.Items[i].UID] = true
	}
	return out, nil
}

func (b *bench) scalePCS(ctx context.Context, ns, name string, from, to int32) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, to))
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	gen := &atomic.Int64{}
	change := func(ctx context.Context) error {
		if err := b.admin.Patch(ctx, pcs, patch); err != nil {
			return err
		}
		gen.Store(pcs.Generation)
		return nil
	}
	label := fmt.Sprintf("scale %d→%d", from, to)
	if to < from {
		return b.measure(ctx, label, "grove", int(2*(from-to)), shrinkMilestones,
			expectation{ns: ns, want: int(2 * to), shrink: true, grove: true, generation: gen}, groveTimeout, change)
	}
	old, err := b.podUIDs(ctx, ns)
	if err != nil {
		return err
	}
	n := int(2 * (to - from))
	return b.measure(ctx, label, "grove", n, growMilestones, expectation{ns: ns, want: n, old: old, grove: true, generation: gen}, groveTimeout, change)
}

// deletePCS deletes every PodCliqueSet of ns and waits for the pods to go.
func (b *bench) deletePCS(ctx context.Context, ns string, pods int, label string) error {
	return b.measure(ctx, label, "grove", pods, []string{MGone}, expectation{ns: ns, want: 0, shrink: true}, groveTimeout,
		func(ctx context.Context) error {
			return b.admin.DeleteAllOf(ctx, &corev1alpha1.PodCliqueSet{}, client.InNamespace(ns))
		})
}

// updateTemplate changes every clique's container environment: every pod is replaced.
func (b *bench) updateTemplate(ctx context.Context, ns, name, revision string, gen *atomic.Int64) error {
	// Again on a conflict: the operator writes the PodCliqueSet's status as it likes, and an
	// update that lost the race left the benchmark waiting out its whole timeout.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pcs := &corev1alpha1.PodCliqueSet{}
		if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err != nil {
			return err
		}
		for _, c := range pcs.Spec.Template.Cliques {
			setRevision(c.Spec.PodSpec.Containers, revision)
		}
		if err := b.admin.Update(ctx, pcs); err != nil {
			return err
		}
		gen.Store(pcs.Generation)
		return nil
	})
}

// steadyWrites are the no-op windows: the operator's writes are counted from the audit log at the end.
type steadyWindow struct {
	Name   string `json:"name"`
	Writes int    `json:"writes"`
	// LeaseWrites are the leader-election lease renewals in the window (not in Writes).
	LeaseWrites int            `json:"leaseWrites"`
	ByVerb      map[string]int `json:"byResourceVerb,omitempty"`
	Seconds     float64        `json:"seconds"`
	from        time.Time
	to          time.Time
}

var steady []*steadyWindow

// noop annotates a PodCliqueSet (a change no pod depends on) and waits the steady-state window.
func (b *bench) noop(ctx context.Context, ns, name string) error {
	// Let the operator finish what the previous workload left (status of the last pods).
	time.Sleep(2 * time.Second)
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	w := &steadyWindow{Name: "annotate PCS " + ns + "/" + name, Seconds: b.scale.Steady.Seconds(), from: time.Now()}
	fmt.Printf(">> %s: counting the operator's writes for %s\n", w.Name, b.scale.Steady.Duration)
	if err := b.admin.Patch(ctx, pcs, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.grove.io/noop":"%d"}}}`, time.Now().UnixNano()))); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.scale.Steady.Duration):
	}
	w.to = time.Now()
	steady = append(steady, w)
	return nil
}

// rawBaseline creates the pods directly at the operator's QPS/burst; grove-scheduler binds them.
func (b *bench) rawBaseline(ctx context.Context, n int) error {
	ns := fmt.Sprintf("raw-%d", n)
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	cfg := rest.CopyConfig(b.env.Cluster.Config)
	cfg.QPS, cfg.Burst = b.qps, b.burst
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = b.measure(ctx, fmt.Sprintf("raw: %d pods by a client", n), "raw", n, plainMilestones, expectation{ns: ns, want: n}, groveTimeout,
		func(ctx context.Context) error {
			return parallel(ctx, n, 32, func(ctx context.Context, i int) error {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("raw-%d", i), Labels: map[string]string{"app": "raw"}}, Spec: podSpec(groveScheduler)}
				_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				return err
			})
		})
	if err != nil {
		return err
	}
	return b.cleanPods(ctx, ns)
}

// deploymentBaseline is a Deployment of n pods placed by kube-scheduler's default profile.
func (b *bench) deploymentBaseline(ctx context.Context, n int) error {
	ns := fmt.Sprintf("deploy-%d", n)
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	labels := map[string]string{"app": "deploy"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(corev1.DefaultSchedulerName)},
		},
	}
	err := b.measure(ctx, fmt.Sprintf("Deployment: %d pods, kube-scheduler", n), "deployment", n, plainMilestones, expectation{ns: ns, want: n}, groveTimeout,
		func(ctx context.Context) error { return b.admin.Create(ctx, d) })
	if err != nil {
		return err
	}
	if err := b.admin.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return err
	}
	return b.cleanPods(ctx, ns)
}

// cleanPods deletes a baseline's pods and waits until they are gone.
func (b *bench) cleanPods(ctx context.Context, ns string) error {
	if err := b.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err := track(ctx, b.cache, expectation{ns: ns, want: 0, shrink: true}, []string{MGone}, time.Now(), 2*time.Minute, nil)
	return err
}

// The CPU profiles the benchmark captures (files in the scratch directory).
const (
	applyProfile         = "operator-cpu.pprof"
	rollingUpdateProfile = "operator-cpu-rolling-update.pprof"
	// apiserverRollingUpdateProfile is kube-apiserver's profile of the 25 % rollout: on two
	// cores the rollout's time is the control plane's CPU, most of it the apiserver's.
	apiserverRollingUpdateProfile = "apiserver-cpu-rolling-update.pprof"
	// quarterRolloutProfile is grove-operator's profile of the same rollout (the one above is
	// of the rollout at the default budget, which reconciles far more often).
	quarterRolloutProfile = "operator-cpu-rolling-update-25.pprof"
)

// profile captures grove-operator's CPU profile for d in the background, into file.
func (b *bench) profile(ctx context.Context, d time.Duration, file string) <-chan error {
	return b.capture(ctx, file, func(ctx context.Context) ([]byte, error) {
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.pprofAddr, int(d.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.ReadAll(resp.Body)
	})
}

// profileAPIServer captures kube-apiserver's CPU profile for d in the background, into file
// (its /debug/pprof, with the admin's credentials).
func (b *bench) profileAPIServer(ctx context.Context, d time.Duration, file string) <-chan error {
	return b.capture(ctx, file, func(ctx context.Context) ([]byte, error) {
		return b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(ctx)
	})
}

// capture writes what get returns into file in the scratch directory, in the background.
func (b *bench) capture(ctx context.Context, file string, get func(context.Context) ([]byte, error)) <-chan error {
	done := make(chan error, 1)
	go func() {
		data, err := get(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(b.scratch, file), data, 0o644)
		}
		done <- err
	}()
	return done
}

// pprofTop is `go tool pprof -top` of a captured profile of program (a binary in the bin
// directory), flat or by cumulative time (nil when it was not captured).
func (b *bench) pprofTop(ctx context.Context, program, file string, cumulative bool) []string {
	path := filepath.Join(b.scratch, file)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	bin, _ := cluster.BinDir()
	args := []string{"tool", "pprof", "-top", "-nodecount=25"}
	if cumulative {
		args = []string{"tool", "pprof", "-top", "-cum", "-nodecount=40"}
	}
	out, err := exec.CommandContext(ctx, "go", append(args, filepath.Join(bin, program), path)...).Output()
	if err != nil {
		return []string{"go tool pprof: " + err.Error()}
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// parallel runs fn for 0..n-1 on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// apiserverRequests is the sum of kube-apiserver's apiserver_request_total (every request it
// has served, by any client).
func (b *bench) apiserverRequests(ctx context.Context) (int, error) {
	data, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return int(total), nil
}
