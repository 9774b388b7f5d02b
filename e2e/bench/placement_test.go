package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/ai-dynamo/grove/e2e/bench/internal/perfdata"
	"github.com/ai-dynamo/grove/pkg/api/common"
)

// rackLabel is the node label templates/node.yaml puts nodes into racks with.
const rackLabel = "topology.kubernetes.io/rack"

// reportPlacement runs before each workload; in gang workloads (test cases named Gang*) it
// measures, once the workload has ended, how the gangs' pods lie over the racks — gangs in one
// rack, racks used, gangs per rack and their skew (perfdata.Placement) — and writes it to
// $ARTIFACTS as placement_<workload>_<time>.json for benchratio. It reads the API once at the
// end rather than watching during the run, so that the measured throughput is the same as
// without it.
func reportPlacement(tCtx ktesting.TContext) error {
	parts := strings.Split(tCtx.Name(), "/")
	if len(parts) < 2 || !strings.HasPrefix(parts[1], "Gang") {
		return nil
	}
	plansAtStart := memberPlans(tCtx)
	tCtx.TB().Cleanup(func() {
		nodes, err := tCtx.Client().CoreV1().Nodes().List(tCtx, metav1.ListOptions{})
		if err != nil {
			tCtx.Errorf("placement: listing nodes: %v", err)
			return
		}
		pods, err := tCtx.Client().CoreV1().Pods(metav1.NamespaceAll).List(tCtx, metav1.ListOptions{LabelSelector: common.LabelPodGang})
		if err != nil {
			tCtx.Errorf("placement: listing pods: %v", err)
			return
		}
		rackOf := map[string]string{}
		racks := map[string]bool{}
		for _, n := range nodes.Items {
			rackOf[n.Name] = n.Labels[rackLabel]
			racks[n.Labels[rackLabel]] = true
		}
		var bound []perfdata.BoundPod
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound = append(bound, perfdata.BoundPod{Gang: p.Namespace + "/" + p.Labels[common.LabelPodGang], Rack: rackOf[p.Spec.NodeName]})
			}
		}
		all := make([]string, 0, len(racks))
		for r := range racks {
			all = append(all, r)
		}
		r := perfdata.PlacementOf(tCtx.Name(), all, bound)
		plans := memberPlans(tCtx)
		r.PlansHandedOut = plans["handed_out"] - plansAtStart["handed_out"]
		r.PlansStale = plans["stale"] - plansAtStart["stale"]
		r.PlansRefused = plans["refused"] - plansAtStart["refused"]
		data, err := json.MarshalIndent(r, "", "  ")
		if err == nil {
			name := "placement_" + strings.NewReplacer("/", "_").Replace(tCtx.Name()) + "_" + time.Now().UTC().Format("20060102T150405") + ".json"
			err = os.WriteFile(filepath.Join(os.Getenv("ARTIFACTS"), name), data, 0o644)
		}
		if err != nil {
			tCtx.Errorf("placement report: %v", err)
		}
		tCtx.Logf("%s: %d gangs, %d in one rack, %d of %d racks used, %d-%d gangs per rack (skew %d); planned nodes %.0f handed out, %.0f stale, %.0f refused",
			tCtx.Name(), r.Gangs, r.GangsInOneRack, r.RacksUsed, r.Racks, r.GangsPerRackMin, r.GangsPerRackMax, r.Skew,
			r.PlansHandedOut, r.PlansStale, r.PlansRefused)
	})
	return nil
}

// memberPlans reads grove_scheduler_member_plans_total by outcome: how many gang members were
// handed the node their gang's plan named (and so filtered one node and skipped scoring).
func memberPlans(tCtx ktesting.TContext) map[string]float64 {
	counters, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "grove_scheduler_member_plans_total",
		map[string]string{}, "outcome")
	if err != nil {
		tCtx.Logf("grove_scheduler_member_plans_total: %v", err)
	}
	return counters
}
