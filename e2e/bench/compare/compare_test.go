// Package compare runs gang schedulers side by side with kube-scheduler's scheduler_perf, in
// one run (`make bench-compare`; benchmarks run only with -bench): kube-scheduler's default
// profile on plain pods (Baseline), grove-scheduler's shipped profile on the same pods in
// PodGangs (Grove) and Kubernetes 1.37's in-tree gang scheduling on the same pods in PodGroups
// (Native). See compare-config.yaml. gangwatch follows every workload's gangs; benchcompare
// turns the results into RESULTS.md.
package compare

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/e2e/bench/gangwatch"
	"github.com/ai-dynamo/grove/plugins"
)

// topic names this module's results: BenchmarkPerfScheduling_benchmark_compare_*.json, and the
// prefix of its gangwatch reports' names ("compare/BenchmarkPerfScheduling/<test>/<workload>").
const topic = "compare"

// podsSchedulingTimeout bounds the gang barrier (and scheduler_perf's own waits).
const podsSchedulingTimeout = 15 * time.Minute

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "compare-config.yaml", topic, plugins.Registry(),
		perf.WithPodsSchedulingTimeout(podsSchedulingTimeout),
		perf.WithPrepareFn(startWatching),
		perf.WithNodeUpdateFn(gangBarrier))
}

// current is the running workload's view of its bench pods for the gang barrier; workloads run
// one at a time.
var current struct {
	sync.Mutex
	pods cache.SharedIndexInformer
	// created counts the bench pods the informer has seen created; expected is the workload's
	// pod count, from the bench.grove.io labels (gangs x gang size).
	created, expected int
	// createNodesCalls counts this workload's createNodes ops: the first creates the cluster,
	// the second is the gang barrier.
	createNodesCalls int
}

// startWatching runs before each workload's ops: it starts gangwatch, whose report lands in
// $ARTIFACTS when the workload ends (before the scheduler and apiserver stop), and an informer
// on the bench pods for the gang barrier.
func startWatching(tCtx ktesting.TContext) error {
	deadline, err := gangwatch.DeadlineFromEnv()
	if err != nil {
		return fmt.Errorf("BENCH_COMPARE_DEADLINE: %w", err)
	}
	name := topic + "/" + tCtx.Name()
	w, err := gangwatch.Start(tCtx, tCtx.Client(), gangwatch.Options{Name: name, Deadline: deadline})
	if err != nil {
		return err
	}

	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactoryWithOptions(tCtx.Client(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = gangwatch.GangLabel }))
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: countCreated}); err != nil {
		w.Stop()
		return err
	}
	factory.Start(stop)
	if !cache.WaitForCacheSync(tCtx.Done(), pods.HasSynced) {
		close(stop)
		w.Stop()
		return fmt.Errorf("bench pod informer did not sync")
	}
	current.Lock()
	current.pods, current.created, current.expected, current.createNodesCalls = pods, 0, 0, 0
	current.Unlock()

	tCtx.TB().Cleanup(func() {
		current.Lock()
		current.pods = nil
		current.Unlock()
		close(stop)
		factory.Shutdown()
		report := w.Stop()
		if err := report.Write(os.Getenv("ARTIFACTS")); err != nil {
			tCtx.Errorf("gangwatch: %v", err)
		}
		tCtx.Logf("gangwatch %s: %d/%d gangs whole, %d partially bound, all bound after %.1fs, finished %v",
			name, report.WholeGangs, report.ExpectedGangs, report.PartiallyBoundGangs, report.AllGangsBoundSeconds, report.Finished)
	})
	return nil
}

func countCreated(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	gangs, _ := strconv.Atoi(pod.Labels[gangwatch.GangCountLabel])
	size, _ := strconv.Atoi(pod.Labels[gangwatch.GangSizeLabel])
	current.Lock()
	defer current.Unlock()
	current.created++
	current.expected = gangs * size
}

// gangBarrier is called after every createNodes op. The workload's first createNodes op creates
// the cluster: it returns at once. The second, `createNodes count: 0` after createPods, is the
// gang barrier: it blocks until every bench pod was seen, is bound, and every delete-when-bound
// pod is gone - which scheduler_perf's barrier op cannot express (it counts bound pods, and
// these get deleted).
func gangBarrier(tCtx ktesting.TContext, _ *scheduler.Scheduler, _ *perf.Workload, _ *corev1.NodeList) error {
	current.Lock()
	current.createNodesCalls++
	pods, call := current.pods, current.createNodesCalls
	current.Unlock()
	if pods == nil || call == 1 {
		return nil
	}
	var created, expected, unbound, left int
	err := wait.PollUntilContextTimeout(tCtx, 200*time.Millisecond, podsSchedulingTimeout, true, func(context.Context) (bool, error) {
		current.Lock()
		created, expected = current.created, current.expected
		current.Unlock()
		unbound, left = barrierState(pods.GetStore().List())
		return barrierDone(created, expected, unbound, left), nil
	})
	if err != nil {
		return fmt.Errorf("gang barrier: %d of %d bench pods seen, %d unbound, %d delete-when-bound pods left: %w",
			created, expected, unbound, left, err)
	}
	return nil
}

// barrierDone: every expected pod was created, none waits to be bound, and none of the
// run-to-completion pods is left.
func barrierDone(created, expected, unbound, deleteWhenBoundLeft int) bool {
	return expected > 0 && created >= expected && unbound == 0 && deleteWhenBoundLeft == 0
}

// barrierState counts the unbound pods and the delete-when-bound pods still present.
func barrierState(objs []any) (unbound, deleteWhenBound int) {
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		if pod.Spec.NodeName == "" {
			unbound++
		}
		if pod.Labels[gangwatch.DeleteWhenBoundLabel] == "true" {
			deleteWhenBound++
		}
	}
	return unbound, deleteWhenBound
}

func decodeProfile(t *testing.T, path string) schedconfig.KubeSchedulerProfile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
	if len(cfg.Profiles) != 1 {
		t.Fatalf("%s: want one profile, got %d", path, len(cfg.Profiles))
	}
	return cfg.Profiles[0]
}

// The comparison is only honest if Grove runs the profile grove-scheduler ships, with the
// feature gates cmd/grove-scheduler sets, Native runs with the gates that turn the in-tree gang
// plugins on, and every scheduler gets the same workloads.
func TestCompareConfigIsHonest(t *testing.T) {
	data, err := os.ReadFile("compare-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var testCases []struct {
		Name                string          `json:"name"`
		FeatureGates        map[string]bool `json:"featureGates"`
		SchedulerConfigPath string          `json:"schedulerConfigPath"`
		Workloads           []struct {
			Name   string         `json:"name"`
			Params map[string]any `json:"params"`
		} `json:"workloads"`
	}
	if err := yaml.Unmarshal(data, &testCases); err != nil {
		t.Fatal(err)
	}
	workloads := map[string][]string{}
	for _, tc := range testCases {
		for _, w := range tc.Workloads {
			workloads[tc.Name] = append(workloads[tc.Name], w.Name)
		}
		switch tc.Name {
		case "Baseline", "BaselineAgain":
			if tc.SchedulerConfigPath != "" || len(tc.FeatureGates) != 0 {
				t.Errorf("%s: want kube-scheduler's default profile and gates, got %q %v", tc.Name, tc.SchedulerConfigPath, tc.FeatureGates)
			}
		case "Grove":
			if tc.SchedulerConfigPath != "../grove-scheduler-config.yaml" {
				t.Errorf("Grove: schedulerConfigPath %q, want ../grove-scheduler-config.yaml", tc.SchedulerConfigPath)
			}
			shipped := decodeProfile(t, "../../../config/scheduler/scheduler-config.yaml")
			bench := decodeProfile(t, tc.SchedulerConfigPath)
			shipped.SchedulerName = bench.SchedulerName
			if !reflect.DeepEqual(shipped, bench) {
				t.Errorf("Grove's profile differs from config/scheduler/scheduler-config.yaml")
			}
			for gate, on := range plugins.FeatureDefaults {
				if tc.FeatureGates[gate] != on {
					t.Errorf("Grove: feature gate %s=%v, cmd/grove-scheduler runs with %v", gate, tc.FeatureGates[gate], on)
				}
			}
		case "Native":
			if tc.SchedulerConfigPath != "" || !tc.FeatureGates["GenericWorkload"] || !tc.FeatureGates["TopologyAwareWorkloadScheduling"] {
				t.Errorf("Native: want the default profile with GenericWorkload and TopologyAwareWorkloadScheduling, got %q %v", tc.SchedulerConfigPath, tc.FeatureGates)
			}
		default:
			t.Errorf("unexpected test case %s: benchcompare would not know its scheduler", tc.Name)
		}
	}
	for _, name := range []string{"Grove", "Native", "BaselineAgain"} {
		if !reflect.DeepEqual(workloads[name], workloads["Baseline"]) {
			t.Errorf("%s runs workloads %v, Baseline %v", name, workloads[name], workloads["Baseline"])
		}
	}
}

// benchcompare's "where the time goes" lines need every test case to collect the plugin
// execution durations, for grove-scheduler's own plugins and the in-tree gang plugins too.
func TestCompareConfigCollectsPluginDurations(t *testing.T) {
	data, err := os.ReadFile("compare-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var testCases []struct {
		Name    string `json:"name"`
		Metrics struct {
			Metrics map[string][]struct {
				Label  string   `json:"label"`
				Values []string `json:"values"`
			} `json:"metrics"`
		} `json:"metricsCollectorConfig"`
	}
	if err := yaml.Unmarshal(data, &testCases); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"plugin":          {"GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount", "NodeResourcesFit", "DefaultBinder"},
		"extension_point": {"PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "Bind", "PlacementGenerate", "PlacementFeasible"},
	}
	for name := range plugins.Registry() {
		want["plugin"] = append(want["plugin"], name)
	}
	for _, tc := range testCases {
		labels := tc.Metrics.Metrics["scheduler_plugin_execution_duration_seconds"]
		if len(labels) == 0 {
			t.Errorf("%s: does not collect scheduler_plugin_execution_duration_seconds", tc.Name)
			continue
		}
		got := map[string]map[string]bool{}
		for _, l := range labels {
			got[l.Label] = map[string]bool{}
			for _, v := range l.Values {
				got[l.Label][v] = true
			}
		}
		for label, values := range want {
			for _, v := range values {
				if !got[label][v] {
					t.Errorf("%s: scheduler_plugin_execution_duration_seconds does not collect %s=%s", tc.Name, label, v)
				}
			}
		}
	}
}
