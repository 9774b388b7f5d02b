// grove-demo shows Grove doing its job on one machine: a real control plane, 64 simulated GPU
// nodes (2 zones × 2 blocks × 4 racks × 4 hosts) and grove-operator + grove-scheduler as
// processes. It places a disaggregated inference workload rack-packed, scales its workers out,
// shows a gang that cannot fit staying whole-pending, and leaves everything running.
//
//	grove-demo up   --state-dir DIR
//	grove-demo down --state-dir DIR
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/demo"
	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/kubectlgrove"
	"github.com/ai-dynamo/grove/internal/operator/app"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

const (
	readyFile = "ready"
	// startTimeout bounds serve bringing the environment up (control plane, kwok, grove-operator,
	// grove-scheduler, nodes): on a loaded 2-core machine the control plane alone can take
	// minutes. up waits startSlack longer, so that serve reports its own failure first.
	startTimeout = 8 * time.Minute
	startSlack   = 30 * time.Second
	// stopGrace is how long a stopped serve gets to stop what it started before SIGKILL.
	stopGrace  = 20 * time.Second
	convergeBy = 3 * time.Minute
)

var fabric = framework.Fabric{Zones: 2, BlocksPerZone: 2, RacksPerBlock: 4, HostsPerRack: 4}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grove-demo up|down [--state-dir DIR]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	stateDir := fs.String("state-dir", ".demo", "directory for the demo's control plane, logs and kubeconfig")
	_ = fs.Parse(os.Args[2:])
	dir, err := filepath.Abs(*stateDir)
	if err == nil {
		switch os.Args[1] {
		case "up":
			err = up(dir)
		case "serve":
			err = serve(dir)
		case "down":
			err = down(dir)
		default:
			err = fmt.Errorf("unknown command %q", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grove-demo:", err)
		os.Exit(1)
	}
}

func step(n int, msg string) { fmt.Printf("\n\033[1m[%d/6] %s\033[0m\n", n, msg) }

func up(dir string) error {
	if pid := cluster.SupervisorPID(dir); pid > 0 && cluster.ProcessAlive(pid) {
		return fmt.Errorf("a demo is already running (pid %d); stop it with `make demo-down`", pid)
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	step(1, "starting etcd, kube-apiserver, kube-controller-manager, kwok, grove-operator and grove-scheduler")
	if err := start(dir); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	c, kc, err := newClients(kubeconfig)
	if err != nil {
		return err
	}
	fmt.Printf("    64 kwok nodes with 8 GPUs each: %d zones × %d blocks × %d racks × %d hosts\n",
		fabric.Zones, fabric.BlocksPerZone, fabric.RacksPerBlock, fabric.HostsPerRack)
	runErr := run(context.Background(), c, kc)
	if runErr != nil {
		fmt.Printf("\nthe demo failed: %v\nlogs are in %s\n", runErr, dir)
	}
	fmt.Printf("\nThe environment stays up%s:\n  export KUBECONFIG=%s\n  kubectl get grove -A\n  kubectl grove tree inference -n demo      (the plugin is bin/kubectl-grove: put bin/ on PATH)\n  kubectl grove why pgang/too-big-0 -n demo\nStop it with: make demo-down (or grove-demo down --state-dir %s)\n",
		map[bool]string{true: " for inspection", false: ""}[runErr != nil], kubeconfig, dir)
	return runErr
}

// start runs `serve` detached (it outlives up) and waits until it reports the environment
// ready. If it fails, up gives up or is interrupted, serve and everything it started are stopped.
func start(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "grove-demo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "serve", "--state-dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logFile.Close()
	if err != nil {
		return err
	}
	// Recorded now, not only once serve is ready, so that a stop finds it while it starts.
	if err := cluster.RecordSupervisorPID(dir, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = waitFor(ctx, startTimeout+startSlack, func() (bool, error) {
		if _, err := os.Stat(filepath.Join(dir, readyFile)); err == nil {
			return true, nil
		}
		if !cluster.ProcessAlive(cmd.Process.Pid) {
			data, _ := os.ReadFile(logPath)
			return false, fmt.Errorf("it exited:\n%s", data)
		}
		return false, nil
	})
	if err == nil {
		return nil
	}
	if serr := cluster.StopSupervised(dir, stopGrace); serr != nil {
		err = errors.Join(err, fmt.Errorf("stopping it: %w", serr))
	}
	return fmt.Errorf("the environment did not start (stopped; logs in %s): %w", dir, err)
}

// run applies the demo's manifests through c and reads what Grove made of them through kc,
// the clients of `kubectl grove`.
func run(ctx context.Context, c client.Client, kc kubectlgrove.Clients) error {
	step(2, "applying ClusterTopology gpu-fabric (zone > block > rack > host) and PodCliqueSet inference")
	if err := applyManifest(ctx, c, "clustertopology.yaml", ""); err != nil {
		return err
	}
	if err := applyManifest(ctx, c, "inference.yaml", demo.Namespace); err != nil {
		return err
	}
	step(3, "waiting for the base gang (router + one prefill/decode unit) to be placed inside one rack")
	base, err := watchTree(ctx, kc, demo.Workload, placed(5, 1))
	if err != nil {
		return err
	}
	for i := range base.Gangs {
		report(base, &base.Gangs[i], "PodGang")
	}
	step(4, "scaling the workers scaling group out to 2: a scaled PodGang appears and lands in one rack")
	pcsg := &corev1alpha1.PodCliqueScalingGroup{}
	pcsg.Namespace, pcsg.Name = demo.Namespace, common.PodCliqueScalingGroupName(demo.Workload, 0, demo.ScalingGroup)
	// The operator writes the group all along: read and write until nothing came between.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Get(ctx, pcsg, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = 2
		return c.SubResource("scale").Update(ctx, pcsg, client.WithSubResourceBody(scale))
	}); err != nil {
		return err
	}
	scaled, err := watchTree(ctx, kc, demo.Workload, func(s *demo.Snapshot) (bool, error) {
		if ok, err := placed(9, 2)(s); !ok || err != nil {
			return ok, err
		}
		// What this step shows: the scaled PodGang whole in one rack, whatever the manifest says.
		g := scaledGang(s)
		if g == nil {
			return false, fmt.Errorf("no scaled PodGang among %d PodGangs", len(s.Gangs))
		}
		if p := s.PackingIn(g, corev1alpha1.TopologyDomainRack); !p.Packed() {
			return false, fmt.Errorf("scaled PodGang %s is not whole in one rack: %d of %d pods bound, racks %v", g.Name, p.Bound, p.Pods, p.Values)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	g := scaledGang(scaled)
	fmt.Printf("    ✓ scaled PodGang %s placed whole in rack %s (%d pods)\n", g.Name, scaled.PackingIn(g, corev1alpha1.TopologyDomainRack).Values[0], len(podsOf(scaled, g.Name)))
	// What `kubectl wait --for=condition=Ready pcs/inference` waits for.
	var ready *metav1.Condition
	if err := waitFor(ctx, convergeBy, func() (bool, error) {
		pcs := &corev1alpha1.PodCliqueSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: demo.Namespace, Name: demo.Workload}, pcs); err != nil {
			return false, nil
		}
		ready = apimeta.FindStatusCondition(pcs.Status.Conditions, common.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue, nil
	}); err != nil {
		return fmt.Errorf("PodCliqueSet %s never became Ready (last: %+v): %w", demo.Workload, ready, err)
	}
	fmt.Printf("    ✓ PodCliqueSet %s Ready: %s\n", demo.Workload, ready.Message)
	step(5, "applying too-big: 6 pods × 8 GPUs that must share a rack of 4 × 8 GPUs — it must stay whole-pending")
	if err := applyManifest(ctx, c, "too-big.yaml", demo.Namespace); err != nil {
		return err
	}
	pending, err := watchTree(ctx, kc, demo.TooBig, func(s *demo.Snapshot) (bool, error) {
		if n := countBound(s); n > 0 {
			return false, fmt.Errorf("%d pods of "+demo.TooBig+" were bound: it cannot fit whole, so none may be", n)
		}
		return len(s.Gangs) == 1 && len(s.Pods) == 6 && unschedulable(&s.Gangs[0]) != nil, nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("    ✓ PodGang %s whole-pending, 0 of %d pods bound: %s\n", pending.Gangs[0].Name, len(pending.Pods), unschedulable(&pending.Gangs[0]).Message)
	fmt.Printf("    $ kubectl grove why pgang/%s -n %s\n", pending.Gangs[0].Name, demo.Namespace)
	var why bytes.Buffer
	if err := kubectlgrove.Why(ctx, kc, demo.Namespace, "PodGang", pending.Gangs[0].Name, &why); err != nil {
		return err
	}
	fmt.Print(indent(why.String()))
	fmt.Printf("    $ kubectl grove topology gpu-fabric\n")
	var topo bytes.Buffer
	if err := kubectlgrove.Topology(ctx, kc, "gpu-fabric", &topo); err != nil {
		return err
	}
	fmt.Print(indent(topo.String()))
	step(6, "done: every gang is whole — placed in one rack, or not at all")
	return nil
}

// placed is the wait condition of a workload that must be placed: want pods Running and gangs
// PodGangs, all Scheduled. It fails at once when the bound pods of a PodGang do not share the
// domain their PodCliqueSet requires: bound pods never move.
func placed(want, gangs int) func(*demo.Snapshot) (bool, error) {
	return func(s *demo.Snapshot) (bool, error) {
		for i := range s.Gangs {
			if p := s.Packing(&s.Gangs[i]); len(p.Values) > 1 {
				return false, fmt.Errorf("PodGang %s is spread over %ss %v; its PodCliqueSet requires one %s", s.Gangs[i].Name, p.Domain, p.Values, p.Domain)
			}
		}
		return len(s.Gangs) == gangs && allRunning(s, want) && allScheduled(s), nil
	}
}

// report prints where a placed PodGang's required packing put it.
func report(s *demo.Snapshot, g *schedv1alpha1.PodGang, what string) {
	if p := s.Packing(g); p.Packed() && p.Domain != "" {
		fmt.Printf("    ✓ %s %s placed whole in %s %s (%d pods)\n", what, g.Name, p.Domain, p.Values[0], p.Pods)
	}
}

func scaledGang(s *demo.Snapshot) *schedv1alpha1.PodGang {
	for i := range s.Gangs {
		if s.Gangs[i].Labels[common.LabelPodCliqueScalingGroup] != "" {
			return &s.Gangs[i]
		}
	}
	return nil
}

func podsOf(s *demo.Snapshot, gang string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range s.Pods {
		if p.Labels[common.LabelPodGang] == gang {
			out = append(out, p)
		}
	}
	return out
}

// unschedulable is the PodGang's Scheduled=False condition when it gives a reason.
func unschedulable(g *schedv1alpha1.PodGang) *metav1.Condition {
	c := apimeta.FindStatusCondition(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
	if c == nil || c.Status != metav1.ConditionFalse || c.Message == "" {
		return nil
	}
	return c
}

func allRunning(s *demo.Snapshot, want int) bool {
	if len(s.Pods) != want {
		return false
	}
	for _, p := range s.Pods {
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
	}
	return true
}

func allScheduled(s *demo.Snapshot) bool {
	for _, g := range s.Gangs {
		if !apimeta.IsStatusConditionTrue(g.Status.Conditions, schedv1alpha1.PodGangConditionScheduled) {
			return false
		}
	}
	return true
}

func countBound(s *demo.Snapshot) int {
	n := 0
	for _, p := range s.Pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// watchTree prints the tree whenever it changes until done holds, fails, or convergeBy passes;
// it returns the last snapshot.
func watchTree(ctx context.Context, c kubectlgrove.Clients, name string, done func(*demo.Snapshot) (bool, error)) (*demo.Snapshot, error) {
	var last string
	var snap *demo.Snapshot
	err := waitFor(ctx, convergeBy, func() (bool, error) {
		s, err := demo.Read(ctx, c, demo.Namespace, name, framework.RackKey, framework.BlockKey)
		if err != nil {
			return false, nil
		}
		snap = s
		var b bytes.Buffer
		s.Render(&b)
		if b.String() != last {
			last = b.String()
			fmt.Printf("%s    ·\n", indent(last))
		}
		return done(s)
	})
	if err != nil {
		return snap, fmt.Errorf("%s: %w", name, err)
	}
	return snap, nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

func applyManifest(ctx context.Context, c client.Client, file, ns string) error {
	data, err := demo.Manifests.ReadFile("manifests/" + file)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if ns != "" {
			u.SetNamespace(ns)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("grove-demo"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", file, err)
		}
	}
}

func newClients(kubeconfig string) (client.Client, kubectlgrove.Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, kubectlgrove.Clients{}, err
	}
	scheme, err := app.Scheme()
	if err != nil {
		return nil, kubectlgrove.Clients{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, kubectlgrove.Clients{}, err
	}
	kc, err := kubectlgrove.NewClients(cfg)
	return c, kc, err
}

// serve runs the environment until SIGTERM.
func serve(dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Every wait of the start-up (the control plane's own are longer) ends by startTimeout.
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	env, err := framework.Start(startCtx, framework.Options{Cluster: cluster.Options{Dir: dir, KeepDir: true}})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	if _, err := env.CreateNodes(startCtx, fabric, framework.NodeShape); err != nil {
		return err
	}
	if err := env.Cluster.CreateNamespace(startCtx, demo.Namespace); err != nil {
		return err
	}
	if err := cluster.WriteSupervisorPID(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), nil, 0o644); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func down(dir string) error {
	if err := cluster.StopSupervised(dir, stopGrace); err != nil {
		return err
	}
	fmt.Println("demo stopped; every process it started has exited")
	return nil
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	})
}
