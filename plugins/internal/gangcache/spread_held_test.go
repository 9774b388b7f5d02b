package gangcache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// TestSpreadsAsBefore drives caches through random member changes (bound, assumed, forgotten,
// terminating, deleted pods; PodGangs deleted, recreated and their spread entries changed) over gangs of two namespaces, two
// spread groups, scoped and unscoped entries and replicas of several PodGangs, and checks after
// every change that each entry's held nodes are what its members hold and that Spreads reads
// the same replicas, PodGangs and domains as walking every member did.
func TestSpreadsAsBefore(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			c := New()
			type gang struct {
				ns, name string
				pg       *v1alpha1.PodGang
			}
			var gangs []gang
			for i := range 12 {
				ns := []string{"a", "b"}[i%2]
				name := fmt.Sprintf("g%d", i)
				member := fmt.Sprintf("r%d", rng.IntN(6)) // some replicas span PodGangs
				var rscs []v1alpha1.ReplicaSpreadConstraint
				for _, group := range []string{"x", "y"}[:1+rng.IntN(2)] {
					rs := v1alpha1.ReplicaSpreadConstraint{Group: group, Member: member, TopologyKey: []string{"rack", "zone"}[rng.IntN(2)],
						Required: rng.IntN(2) == 0, MaxSkew: 1}
					if rng.IntN(3) == 0 {
						rs.PodGroupNames = []string{"w"}
					}
					rscs = append(rscs, rs)
				}
				if rng.IntN(6) == 0 {
					rscs = nil // a gang of the namespace without spreads
				}
				pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
					Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 1}, {Name: "w", MinReplicas: 2}},
						ReplicaSpreadConstraints: rscs}}
				gangs = append(gangs, gang{ns: ns, name: name, pg: pg})
				c.UpsertPodGang(pg)
			}
			pods := map[string]*v1.Pod{}
			for step := range 400 {
				g := gangs[rng.IntN(len(gangs))]
				uid := fmt.Sprintf("%s-%s-%d", g.ns, g.name, rng.IntN(5))
				group := []string{"fe", "w", "w"}[rng.IntN(3)]
				node := fmt.Sprintf("n%d", rng.IntN(8))
				pod := pods[uid]
				if pod == nil {
					pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: g.ns, Name: uid, UID: types.UID(uid),
						Labels: map[string]string{common.LabelPodGang: g.name, common.LabelPodClique: group}}}
				}
				switch op := rng.IntN(10); op {
				case 0, 1:
					c.Assume(pod, node)
				case 2:
					c.Forget(pod)
				case 3:
					c.Bind(pod, node)
				case 4, 5:
					cp := pod.DeepCopy()
					if cp.Spec.NodeName == "" && rng.IntN(2) == 0 {
						cp.Spec.NodeName = node
					}
					pod = cp
					c.UpsertPod(pod)
				case 6:
					cp := pod.DeepCopy()
					terminating(cp)
					pod = cp
					c.UpsertPod(pod)
				case 7:
					c.DeletePod(pod)
					delete(pods, uid)
					pod = nil
				case 8:
					switch rng.IntN(4) {
					case 0:
						c.DeletePodGang(g.ns, g.name)
						c.UpsertPodGang(g.pg)
					case 1:
						// The PodGang's spread entries change: another replica, group or key,
						// or none.
						pg := g.pg.DeepCopy()
						pg.Generation++
						for i := range pg.Spec.ReplicaSpreadConstraints {
							rs := &pg.Spec.ReplicaSpreadConstraints[i]
							switch rng.IntN(4) {
							case 0:
								rs.Member = fmt.Sprintf("r%d", rng.IntN(6))
							case 1:
								rs.Group = []string{"x", "y"}[rng.IntN(2)]
							case 2:
								rs.TopologyKey = []string{"rack", "zone"}[rng.IntN(2)]
							}
						}
						if rng.IntN(5) == 0 {
							pg.Spec.ReplicaSpreadConstraints = nil
						}
						c.UpsertPodGang(pg)
					}
				case 9:
					c.UpsertPod(pod)
				}
				if pod != nil {
					pods[uid] = pod
				}
				c.mu.RLock()
				for key, e := range c.gangs {
					require.Equal(t, heldOf(e), heldList(e), "step %d: held nodes of %s", step, key)
				}
				c.mu.RUnlock()
				for _, g := range gangs {
					key := g.ns + "/" + g.name
					require.Equal(t, normalSpreads(c.spreadsBefore(key)), normalSpreads(c.Spreads(key)), "step %d: spreads of %s", step, key)
				}
			}
		})
	}
}

// heldOf is what e's members hold, as "group/node" with the number of members.
func heldOf(e *entry) map[string]int32 {
	out := map[string]int32{}
	for _, m := range e.members {
		if m.holdsNode() {
			out[m.group+"/"+m.node]++
		}
	}
	return out
}

func heldList(e *entry) map[string]int32 {
	out := map[string]int32{}
	for i, h := range e.held {
		if e.heldAt[heldNode{group: h.group, node: h.node}] != i {
			out["bad position of "+h.group+"/"+h.node] = int32(i)
		}
		out[h.group+"/"+h.node] += h.n
	}
	if len(e.heldAt) != len(e.held) {
		out["stale positions"] = int32(len(e.heldAt))
	}
	return out
}

// normalSpreads orders the replicas by PodGang and keeps each one's distinct nodes, sorted:
// what placement reads of them (the domains each replica uses).
func normalSpreads(in []placement.Spread) []placement.Spread {
	out := slices.Clone(in)
	for i := range out {
		others := make([]placement.SpreadMember, len(out[i].Others))
		for j, m := range out[i].Others {
			nodes := slices.Clone(m.Nodes)
			sort.Strings(nodes)
			others[j] = placement.SpreadMember{Gang: m.Gang, Nodes: slices.Compact(nodes)}
		}
		sort.Slice(others, func(a, b int) bool { return others[a].Gang < others[b].Gang })
		out[i].Others = others
	}
	return out
}
