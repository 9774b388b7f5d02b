// Package coscheduling measures scheduler-plugins' Coscheduling (sigs.k8s.io/scheduler-plugins
// v0.34.7, unmodified) with kube-scheduler 1.34's scheduler_perf, on the workloads every
// scheduler in the comparison runs (issue #9, `make bench-coscheduling`). A Baseline test case,
// kube-scheduler's default profile on the same pods without gangs, runs in the same process so
// that this module's numbers have a baseline measured by the same Kubernetes version.
//
// It is its own Go module because Coscheduling v0.34.7 compiles only against Kubernetes 1.34,
// while the root module is on 1.37.
package coscheduling

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeobj "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/ktesting"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	// Registers CoschedulingArgs with kube-scheduler's config scheme, which scheduler_perf
	// decodes schedulerConfigPath with.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/e2e/bench/gangwatch"
)

const (
	configFile = "performance-config.yaml"
	// The shared templates of the comparison, written in scheduler_perf 1.37's template
	// language; renderTemplates translates them for 1.34.
	sharedTemplates = "../templates"
	// renderedDir is where renderTemplates writes one workload's templates before it runs;
	// performance-config.yaml points at it. Go ignores directories starting with "_".
	renderedDir = "_rendered"
)

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	// Coscheduling's controller-runtime cache logs through controller-runtime's logger, which
	// otherwise complains with a stack trace that it was never set.
	ctrllog.SetLogger(klog.Background())
	os.Exit(m.Run())
}

func BenchmarkPerfScheduling(b *testing.B) {
	perf.PluginNames = append(perf.PluginNames, coscheduling.Name)
	registry := frameworkruntime.Registry{coscheduling.Name: newCoscheduling}
	perf.RunBenchmarkPerfScheduling(b, configFile, "coscheduling", registry, perf.WithPrepareFn(prepare))
}

// newCoscheduling runs the unmodified plugin, and takes care that the goroutines it starts end
// with the scheduler, as scheduler_perf checks after every workload.
//
// scheduler_perf 1.34 calls framework.GoleakCheck(b) before it starts etcd, the apiserver and
// the scheduler of a workload; after the workload it fails the benchmark if goroutines started
// since are still running 5 s after teardown. It offers no option to ignore some (GoleakCheck's
// goleak options are fixed in setupTestCase, and ktesting has none either), and ignoring them
// would hide real leaks anyway. Coscheduling starts two kinds:
//   - controller-runtime's cache for PodGroups (pkg/util.NewClientWithCachedReader): it runs
//     on the plugin's context, the scheduler's, so it stops with the scheduler; nothing to do.
//   - two github.com/patrickmn/go-cache janitors (core.NewPodGroupManager: permittedPG,
//     backedOffPG). go-cache has no Stop: a janitor ends when the finalizer of its Cache runs,
//     once the Cache is unreachable. Nothing in the plugin is reachable once the scheduler has
//     stopped, but finalizers run only after a garbage collection, which nothing triggers
//     during the 5 s goleak waits. So when the scheduler's context ends we collect garbage
//     until the janitors are gone (their finalizers run right after), which lets go-cache stop
//     them the way it is designed to, without touching the plugin's internals.
func newCoscheduling(ctx context.Context, obj runtimeobj.Object, h framework.Handle) (framework.Plugin, error) {
	p, err := coscheduling.New(ctx, obj, h)
	if err != nil {
		return nil, err
	}
	go collectJanitorsAfter(ctx)
	return p, nil
}

// collectJanitorsAfter runs garbage collections after ctx ends until no go-cache janitor is
// left, for at most 4 s so that it ends within goleak's 5 s retries itself (if a janitor
// outlived that, goleak reports it, and it would be a real leak).
func collectJanitorsAfter(ctx context.Context) {
	<-ctx.Done()
	for start := time.Now(); time.Since(start) < 4*time.Second; time.Sleep(50 * time.Millisecond) {
		runtime.GC()
		if !janitorRunning() {
			return
		}
	}
}

func janitorRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Contains(string(buf[:n]), "github.com/patrickmn/go-cache.(*janitor).Run")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// prepare runs before each workload, once its apiserver and scheduler are up: it renders the
// workload's templates and starts gangwatch, which stops and writes its report to $ARTIFACTS
// when the workload ends.
func prepare(tCtx ktesting.TContext) error {
	testCase, workload, err := names(tCtx.Name())
	if err != nil {
		return err
	}
	params, ok := workloadParams[workload]
	if !ok {
		return fmt.Errorf("workload %s has no entry in workloadParams", workload)
	}
	if err := renderTemplates(params, renderedDir); err != nil {
		return err
	}
	deadline, err := gangwatch.DeadlineFromEnv()
	if err != nil {
		return err
	}
	w, err := gangwatch.Start(tCtx, tCtx.Client(), gangwatch.Options{Name: "coscheduling_" + testCase + "_" + workload, Deadline: deadline})
	if err != nil {
		return err
	}
	// Cleanups run in reverse order, so this one runs before scheduler_perf stops the scheduler
	// and the apiserver.
	tCtx.Cleanup(func() {
		if params.DeleteWhenBound {
			waitForGangsToRun(tCtx)
		}
		report := w.Stop()
		tCtx.Logf("gangwatch %s: %+v", report.Name, report)
		if err := report.Write(os.Getenv("ARTIFACTS")); err != nil {
			tCtx.Errorf("writing the gangwatch report: %v", err)
		}
	})
	return nil
}

// waitForGangsToRun ends a contention workload once every gang ran. scheduler_perf's barrier op
// cannot wait for that: it waits until as many pods are scheduled as were created, and
// gangwatch deletes each gang once it was bound whole (to make room for the next ones), so the
// count is never reached. Here the workload ends when no delete-when-bound pod is left: every
// gang was bound whole and deleted, or gangwatch gave up at its deadline and deleted the rest.
func waitForGangsToRun(tCtx ktesting.TContext) {
	err := wait.PollUntilContextTimeout(tCtx, time.Second, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := tCtx.Client().CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			LabelSelector: gangwatch.DeleteWhenBoundLabel + "=true",
		})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		tCtx.Errorf("waiting for every gang to run: %v", err)
	}
}

// names splits BenchmarkPerfScheduling/<test case>/<workload>.
func names(testName string) (testCase, workload string, err error) {
	parts := strings.Split(testName, "/")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("unexpected test name %q", testName)
	}
	return parts[1], parts[2], nil
}

// templateParams are what the shared templates of the comparison take as templateParams in
// scheduler_perf 1.37. scheduler_perf 1.34 has no templateParams, and fails a workload whose
// params are not all used by its ops, so they live here, keyed by workload name;
// TestWorkloadParams checks them against performance-config.yaml.
type templateParams struct {
	Nodes           int
	NodesPerRack    int
	Gangs           int
	PodsPerGang     int
	CPU             string
	DeleteWhenBound bool
}

func (p templateParams) values() map[string]any {
	return map[string]any{
		"nodesPerRack":    p.NodesPerRack,
		"gangs":           p.Gangs,
		"podsPerGang":     p.PodsPerGang,
		"cpu":             p.CPU,
		"deleteWhenBound": p.DeleteWhenBound,
	}
}

var workloadParams = map[string]templateParams{
	"500Nodes_3000Pods_GangsOf4":      {Nodes: 500, NodesPerRack: 25, Gangs: 750, PodsPerGang: 4, CPU: "100m"},
	"500Nodes_3008Pods_GangsOf64":     {Nodes: 500, NodesPerRack: 25, Gangs: 47, PodsPerGang: 64, CPU: "100m"},
	"500Nodes_3000Pods_GangsOf1000":   {Nodes: 500, NodesPerRack: 25, Gangs: 3, PodsPerGang: 1000, CPU: "100m"},
	"500Nodes_Contention_32GangsOf64": {Nodes: 500, NodesPerRack: 25, Gangs: 32, PodsPerGang: 64, CPU: "2", DeleteWhenBound: true},
	"500Nodes_Preferred_100GangsOf16": {Nodes: 500, NodesPerRack: 25, Gangs: 100, PodsPerGang: 16, CPU: "1"},
	"5000Nodes_15000Pods_GangsOf4":    {Nodes: 5000, NodesPerRack: 100, Gangs: 3750, PodsPerGang: 4, CPU: "100m"},
	"5000Nodes_15040Pods_GangsOf64":   {Nodes: 5000, NodesPerRack: 100, Gangs: 235, PodsPerGang: 64, CPU: "100m"},
	"5000Nodes_15000Pods_GangsOf1000": {Nodes: 5000, NodesPerRack: 100, Gangs: 15, PodsPerGang: 1000, CPU: "100m"},
}

// The shared templates the workloads use, and the names performance-config.yaml reads them as.
var templateFiles = []string{"node.yaml", "plain-pod.yaml", "coscheduling-pod.yaml", "coscheduling-podgroup.yaml"}

var (
	renderMu sync.Mutex
	action   = regexp.MustCompile(`{{.*?}}`)
	field    = regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_]*)`)
	// scheduler_perf 1.37's template functions that 1.34 has under another name.
	funcs134 = map[string]string{"DivideInt": "div", "Mod": "mod"}
	// 1.37 functions 1.34 lacks; a template using them fails to render rather than misbehave.
	missing134 = regexp.MustCompile(`\b(AddInt|SubtractInt|MultiplyInt|Int|JSON|AddFloat|SubtractFloat|MultiplyFloat|DivideFloat)\b`)
)

// renderTemplates writes the shared templates, written for scheduler_perf 1.37 (template
// functions DivideInt and Mod, templateParams as fields), into dir in scheduler_perf 1.34's
// language: 1.34 runs templates with only .Index and .Count, and names the functions div and
// mod. So every templateParams field becomes a literal in the template and the functions are
// renamed; .Index and .Count stay for 1.34 to fill in.
func renderTemplates(p templateParams, dir string) error {
	renderMu.Lock()
	defer renderMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	values := p.values()
	for _, name := range templateFiles {
		src, err := os.ReadFile(filepath.Join(sharedTemplates, name))
		if err != nil {
			return err
		}
		var failed error
		out := action.ReplaceAllStringFunc(string(src), func(a string) string {
			if m := missing134.FindString(a); m != "" {
				failed = fmt.Errorf("%s: %s has no equivalent in scheduler_perf 1.34", name, m)
			}
			for from, to := range funcs134 {
				a = regexp.MustCompile(`\b`+from+`\b`).ReplaceAllString(a, to)
			}
			return field.ReplaceAllStringFunc(a, func(f string) string {
				key := f[1:]
				if key == "Index" || key == "Count" {
					return f
				}
				v, ok := values[key]
				if !ok {
					failed = fmt.Errorf("%s: unknown template parameter %s", name, key)
					return f
				}
				if s, ok := v.(string); ok {
					return fmt.Sprintf("%q", s)
				}
				return fmt.Sprint(v)
			})
		})
		if failed != nil {
			return failed
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// TestWorkloadParams checks that every workload of performance-config.yaml has templateParams
// that agree with its scheduler_perf params, and that the templates render.
func TestWorkloadParams(t *testing.T) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var testCases []struct {
		Name      string
		Workloads []struct {
			Name   string
			Params map[string]int
		}
	}
	if err := yaml.Unmarshal(data, &testCases); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range testCases {
		for _, w := range tc.Workloads {
			seen[w.Name] = true
			p, ok := workloadParams[w.Name]
			if !ok {
				t.Errorf("%s/%s: no workloadParams entry", tc.Name, w.Name)
				continue
			}
			pods := p.Gangs * p.PodsPerGang
			want := map[string]int{"nodes": p.Nodes, "pods": 0, "contentionPods": 0}
			if p.DeleteWhenBound {
				want["contentionPods"] = pods
			} else {
				want["pods"] = pods
			}
			if tc.Name == "Coscheduling" {
				want["gangs"] = p.Gangs
			}
			for k, v := range want {
				if w.Params[k] != v {
					t.Errorf("%s/%s: param %s = %d, want %d", tc.Name, w.Name, k, w.Params[k], v)
				}
			}
			if len(w.Params) != len(want) {
				t.Errorf("%s/%s: params %v, want %v", tc.Name, w.Name, w.Params, want)
			}
			if p.Nodes%p.NodesPerRack != 0 {
				t.Errorf("%s: %d nodes are not whole racks of %d", w.Name, p.Nodes, p.NodesPerRack)
			}
		}
	}
	for name, p := range workloadParams {
		if !seen[name] {
			t.Errorf("workloadParams has %s, which performance-config.yaml does not run", name)
		}
		if err := renderTemplates(p, t.TempDir()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
