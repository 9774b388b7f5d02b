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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/cluster"
	"github.com/ai-dynamo/grove/e2e/demo"
	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/operator/app"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

const (
	namespace  = "demo"
	readyFile  = "ready"
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
	if err := cmd.Start(); err != nil {
		return err
	}
	logFile.Close()
	if err := waitFor(3*time.Minute, func() (bool, error) {
		if _, err := os.Stat(filepath.Join(dir, readyFile)); err == nil {
			return true, nil
		}
		if !cluster.ProcessAlive(cmd.Process.Pid) {
			data, _ := os.ReadFile(logPath)
			return false, fmt.Errorf("the environment failed to start:\n%s", data)
		}
		return false, nil
	}); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	c, err := newClient(kubeconfig)
	if err != nil {
		return err
	}
	fmt.Printf("    64 kwok nodes with 8 GPUs each: %d zones × %d blocks × %d racks × %d hosts\n",
		fabric.Zones, fabric.BlocksPerZone, fabric.RacksPerBlock, fabric.HostsPerRack)
	ctx := context.Background()
	if err := run(ctx, c); err != nil {
		fmt.Printf("\nthe demo did not go as planned: %v\nlogs are in %s\n", err, dir)
	}
	fmt.Printf("\nThe environment stays up:\n  export KUBECONFIG=%s\n  kubectl get pcs,pclq,pcsg,pg -A\nStop it with: make demo-down\n", kubeconfig)
	return nil
}

func run(ctx context.Context, c client.Client) error {
	step(2, "applying ClusterTopology gpu-fabric (zone > block > rack > host) and PodCliqueSet inference")
	if err := applyManifest(ctx, c, "clustertopology.yaml", ""); err != nil {
		return err
	}
	if err := applyManifest(ctx, c, "inference.yaml", namespace); err != nil {
		return err
	}
	step(3, "waiting for the base gang (router + one prefill/decode unit) to be placed inside one rack")
	if err := watchTree(ctx, c, "inference", func(s *demo.Snapshot) bool { return allRunning(s, 5) && allScheduled(s) }); err != nil {
		return err
	}
	step(4, "scaling the workers scaling group out to 2: a scaled PodGang appears and lands in one rack")
	pcsg := &corev1alpha1.PodCliqueScalingGroup{}
	pcsg.Namespace, pcsg.Name = namespace, common.PodCliqueScalingGroupName("inference", 0, "workers")
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(ctx, pcsg, scale); err != nil {
		return err
	}
	scale.Spec.Replicas = 2
	if err := c.SubResource("scale").Update(ctx, pcsg, client.WithSubResourceBody(scale)); err != nil {
		return err
	}
	if err := watchTree(ctx, c, "inference", func(s *demo.Snapshot) bool {
		return len(s.Gangs) == 2 && allRunning(s, 9) && allScheduled(s)
	}); err != nil {
		return err
	}
	step(5, "applying too-big: 6 pods × 8 GPUs that must share a rack of 4 × 8 GPUs — it must stay whole-pending")
	if err := applyManifest(ctx, c, "too-big.yaml", namespace); err != nil {
		return err
	}
	if err := watchTree(ctx, c, "too-big", func(s *demo.Snapshot) bool {
		for _, g := range s.Gangs {
			for _, cond := range g.Status.Conditions {
				if cond.Type == schedv1alpha1.PodGangConditionScheduled && cond.Status == "False" && cond.Message != "" {
					return len(s.Pods) == 6 && countBound(s) == 0
				}
			}
		}
		return false
	}); err != nil {
		return err
	}
	step(6, "done: every gang is whole — placed in one rack, or not at all")
	return nil
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

// watchTree prints the tree whenever it changes until done holds (or convergeBy passes).
func watchTree(ctx context.Context, c client.Client, name string, done func(*demo.Snapshot) bool) error {
	var last string
	var snap *demo.Snapshot
	err := waitFor(convergeBy, func() (bool, error) {
		s, err := demo.Read(ctx, c, namespace, name, framework.RackKey, framework.BlockKey)
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
		return done(s), nil
	})
	if err != nil && snap != nil {
		return fmt.Errorf("%s did not converge: %w", name, err)
	}
	return err
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
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("grove-demo"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", file, err)
		}
	}
}

func newClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme, err := app.Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// serve runs the environment until SIGTERM.
func serve(dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env, err := framework.Start(ctx, framework.Options{Cluster: cluster.Options{Dir: dir, KeepDir: true}})
	if err != nil {
		return err
	}
	defer env.Stop()
	if _, err := env.CreateNodes(ctx, fabric, framework.NodeShape); err != nil {
		return err
	}
	if err := env.Cluster.CreateNamespace(ctx, namespace); err != nil {
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
	if err := cluster.StopSupervised(dir, 20*time.Second); err != nil {
		return err
	}
	fmt.Println("demo stopped; every process it started has exited")
	return nil
}

func waitFor(timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	})
}
