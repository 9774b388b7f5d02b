package topology

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// BenchmarkPlan plans one gang of 8 over 5000 nodes in racks of 25, a new attempt each time
// over the same node objects, as the 5000-node benchmark's workloads do: required in one rack
// (rack-required), and required in one rack with its replica spread over the racks, maxSkew 1,
// while 1874 other replicas hold nodes (spread, the workload's end). Members carry the
// tolerations the apiserver adds to every pod.
func BenchmarkPlan(b *testing.B) {
	const nodes, gangs, size = 5000, 1875, 8
	infos := make([]fwk.NodeInfo, nodes)
	for i := range infos {
		infos[i] = nodeInfo(testNode(fmt.Sprintf("n%d", i), "4", rackKey, fmt.Sprintf("rack-%d", i/25)))
	}
	tolerate := func(pod *v1.Pod) {
		pod.Spec.Tolerations = []v1.Toleration{
			{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		}
	}
	spread := func(name string) v1alpha1.PodGangSpec {
		spec := gangSpec(size, rackKey, "")
		spec.ReplicaSpreadConstraints = []v1alpha1.ReplicaSpreadConstraint{{Group: "bench", Member: name, TopologyKey: rackKey, MaxSkew: 1}}
		return spec
	}
	p := newTestPlugin(b, 50)
	required := addGang(p, "required", gangSpec(size, rackKey, ""), size, "100m", tolerate)
	for g := range gangs - 1 {
		name := fmt.Sprintf("placed-%d", g)
		addGang(p, name, spread(name), size, "100m", tolerate, func(pod *v1.Pod) {
			// Gang g took rack g mod 200 (skew 1 over the racks), one node per member.
			pod.Spec.NodeName = fmt.Sprintf("n%d", (g%200)*25+len(pod.Name)%25)
		})
	}
	spreading := addGang(p, "spread", spread("spread"), size, "100m", tolerate)
	for _, bc := range []struct {
		name string
		pod  *v1.Pod
	}{{"rack-required", required[0]}, {"spread", spreading[0]}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), bc.pod, infos); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}
