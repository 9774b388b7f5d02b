// Package bench measures grove-scheduler with kube-scheduler's scheduler_perf: the default
// profile on plain pods as the baseline, and Grove's profile on the same pods grouped into
// PodGangs, in one run (`make bench`; benchmarks run only with -bench). benchratio prints the
// throughput of each workload and its ratio to the baseline of the same size.
package bench

import (
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	_ "k8s.io/component-base/logs/json/register"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/ai-dynamo/grove/plugins"
)

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "grove", plugins.Registry(),
		perf.WithPodsSchedulingTimeout(15*time.Minute), perf.WithPrepareFn(prepare))
}

// prepare runs before each workload's ops: the stuck gangs' attempt count and the gangs'
// placement report.
func prepare(tCtx ktesting.TContext) error {
	if err := watchStuck(tCtx); err != nil {
		return err
	}
	return reportPlacement(tCtx)
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

// The benchmark measures the profile grove-scheduler ships, not a tuned copy.
func TestBenchmarkProfileIsTheShippedOne(t *testing.T) {
	shipped := decodeProfile(t, "../../config/scheduler/scheduler-config.yaml")
	bench := decodeProfile(t, "grove-scheduler-config.yaml")
	shipped.SchedulerName = bench.SchedulerName
	if !reflect.DeepEqual(shipped, bench) {
		t.Errorf("the benchmark profile differs from config/scheduler/scheduler-config.yaml:\nshipped: %+v\nbench:   %+v", shipped, bench)
	}
}
