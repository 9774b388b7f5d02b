package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/ai-dynamo/grove/e2e/bench/internal/perfdata"
	"github.com/ai-dynamo/grove/pkg/api/common"
)

// stuckCase is the test case whose stuck gangs' attempts watchStuck counts.
const stuckCase = "StuckGangs"

// watchStuck runs before each workload; in StuckGangs it counts the scheduler's unschedulable
// attempts — only the stuck gangs' members fail there — from the first plain pod's creation
// to the end of the workload (the plain pods are bound, then 30 s pass), and writes them to
// $ARTIFACTS as a perfdata.Stuck report that benchratio reads.
func watchStuck(tCtx ktesting.TContext) error {
	if !strings.Contains(tCtx.Name(), "/"+stuckCase+"/") {
		return nil
	}
	var (
		mu              sync.Mutex
		from            time.Time
		attemptsAtStart float64
	)
	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactoryWithOptions(tCtx.Client(), 0, informers.WithNamespace("plain-0"))
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		mu.Lock()
		defer mu.Unlock()
		if from.IsZero() {
			from, attemptsAtStart = time.Now(), unschedulableAttempts(tCtx)
		}
	}}); err != nil {
		return err
	}
	factory.Start(stop)
	tCtx.TB().Cleanup(func() {
		close(stop)
		factory.Shutdown()
		mu.Lock()
		defer mu.Unlock()
		if from.IsZero() {
			tCtx.Errorf("%s: no plain pod was seen", tCtx.Name())
			return
		}
		r := perfdata.Stuck{Name: tCtx.Name(), Seconds: time.Since(from).Seconds(),
			Attempts: unschedulableAttempts(tCtx) - attemptsAtStart, Gangs: stuckGangs(tCtx)}
		if r.Gangs > 0 && r.Seconds > 0 {
			r.PerGangPerMinute = r.Attempts / float64(r.Gangs) / (r.Seconds / 60)
		}
		data, err := json.MarshalIndent(r, "", "  ")
		if err == nil {
			// One file per round: make bench's rounds share the directory.
			name := "stuck_" + strings.NewReplacer("/", "_").Replace(tCtx.Name()) + "_" + time.Now().UTC().Format("20060102T150405") + ".json"
			err = os.WriteFile(filepath.Join(os.Getenv("ARTIFACTS"), name), data, 0o644)
		}
		if err != nil {
			tCtx.Errorf("stuck gangs report: %v", err)
		}
		tCtx.Logf("%s: %d stuck gangs, %.0f attempts in %.1fs: %.2f per gang per minute", tCtx.Name(), r.Gangs, r.Attempts, r.Seconds, r.PerGangPerMinute)
	})
	return nil
}

// unschedulableAttempts reads the scheduler's scheduler_schedule_attempts_total{result=unschedulable}.
func unschedulableAttempts(tCtx ktesting.TContext) float64 {
	counters, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "scheduler_schedule_attempts_total",
		map[string]string{"profile": "default-scheduler"}, "result")
	if err != nil {
		tCtx.Logf("scheduler_schedule_attempts_total: %v", err)
	}
	return counters["unschedulable"]
}

// stuckGangs counts the gangs of the pods in namespace stuck-0.
func stuckGangs(tCtx ktesting.TContext) int {
	list, err := tCtx.Client().CoreV1().Pods("stuck-0").List(tCtx, metav1.ListOptions{})
	if err != nil {
		tCtx.Errorf("listing the stuck pods: %v", err)
		return 0
	}
	gangs := map[string]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.Spec.NodeName != "" {
			tCtx.Errorf("stuck pod %s was bound to %s", pod.Name, pod.Spec.NodeName)
		}
		gangs[pod.Labels[common.LabelPodGang]] = true
	}
	return len(gangs)
}
