package gangcache

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// BenchmarkSpreads reads the replica spreads of each of 1875 gangs of 8, all replicas of one
// spread group and bound (the spread workload of the 5000-node benchmark once placed): every
// gang's plan reads what all the others hold.
func BenchmarkSpreads(b *testing.B) {
	const gangs, size = 1875, 8
	c := New()
	keys := make([]string, gangs)
	for g := range gangs {
		name := fmt.Sprintf("gang-%d", g)
		keys[g] = "ns/" + name
		c.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
			Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "workers", MinReplicas: size}},
				ReplicaSpreadConstraints: []v1alpha1.ReplicaSpreadConstraint{{Group: "bench", Member: name, TopologyKey: "rack", MaxSkew: 1}}}})
		for m := range size {
			p := memberPod(fmt.Sprintf("%s-%d", name, m), "workers", boundTo(fmt.Sprintf("node-%d", (g*size+m)%5000)))
			p.Labels[common.LabelPodGang] = name
			c.UpsertPod(p)
		}
	}
	for _, bc := range []struct {
		name    string
		spreads func(string) []placement.Spread
	}{{"before", c.spreadsBefore}, {"held", c.Spreads}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if got := bc.spreads(keys[i%gangs]); len(got) != 1 || len(got[0].Others) != gangs-1 {
					b.Fatalf("spreads of %s: %d entries", keys[i%gangs], len(got))
				}
			}
		})
	}
}
