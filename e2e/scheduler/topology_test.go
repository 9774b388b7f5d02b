package schedulere2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	rackKey  = "topology.kubernetes.io/rack"
	blockKey = "example.com/block"
)

func rack(name, cpu, rackValue string) node {
	return node{name: name, cpu: cpu, labels: map[string]string{rackKey: rackValue}}
}

// onlyOn asserts that every node of p is in allowed.
func onlyOn(t *testing.T, p placement, allowed map[string]bool, what string) {
	t.Helper()
	for n := range p.nodes {
		assert.True(t, allowed[n], "%s: pod on node %s outside %v", what, n, allowed)
	}
}

// Scenario 6: pack constraints.
func TestTopology(t *testing.T) {
	t.Run("required rack: tightest rack first keeps the big rack for the big gang", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		e.addNodes(rack("a", "4", "r1"), rack("b", "4", "r1"),
			rack("c", "4", "r2"), rack("d", "4", "r2"), rack("e", "4", "r2"), rack("f", "4", "r2"))
		// 8 CPU fit both racks; r1 is the tight fit. Had it gone to r2, the 12-CPU gang
		// below would fit no rack.
		e.createGang(gang{name: "small", constraint: required(rackKey), groups: workers(4, "2")})
		onlyOn(t, e.waitBound("small", 4), e.nodesWithLabel(rackKey, "r1"), "small")
		e.createGang(gang{name: "large", constraint: required(rackKey), groups: workers(6, "2")})
		onlyOn(t, e.waitBound("large", 6), e.nodesWithLabel(rackKey, "r2"), "large")
		e.waitScheduledCondition("large", metav1.ConditionTrue, "6 of 6 required pods are bound")
		assert.Equal(t, 1.0, *e.podGang("large").Status.PlacementScore, "one rack")
	})

	t.Run("nested: one block for the gang, one host per PodGroup inside it", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		block := func(name, cpu, b string) node {
			return node{name: name, cpu: cpu, labels: map[string]string{blockKey: b}}
		}
		e.addNodes(block("h1", "8", "b1"), block("h2", "4", "b1"), block("h3", "4", "b2"), block("h4", "4", "b2"))
		// decode needs 6 CPU on one host: only h1, so block b1; prefill then needs 4 CPU on one
		// host of b1 besides what decode took: h2.
		e.createGang(gang{name: "nested", constraint: required(blockKey), groups: []group{
			{name: "decode", min: 3, replicas: 3, cpu: "2", constraint: required(v1.LabelHostname)},
			{name: "prefill", min: 2, replicas: 2, cpu: "2", constraint: required(v1.LabelHostname)},
		}})
		e.waitBound("nested", 5)
		byGroup := map[string]map[string]int{}
		for _, pod := range e.pods("nested") {
			group := pod.Labels["grove.io/podclique"]
			if byGroup[group] == nil {
				byGroup[group] = map[string]int{}
			}
			byGroup[group][pod.Spec.NodeName]++
		}
		assert.Equal(t, map[string]map[string]int{
			"decode":  {e.nodeName("h1"): 3},
			"prefill": {e.nodeName("h2"): 2},
		}, byGroup)
	})

	t.Run("preferred only: packs into the tightest rack, and is soft when no rack holds the gang", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		e.addNodes(rack("a", "4", "r1"), rack("b", "4", "r1"), rack("c", "4", "r1"),
			rack("d", "4", "r2"), rack("e", "4", "r2"),
			rack("f", "4", "r3"), rack("g", "4", "r3"))
		e.createGang(gang{name: "fits", constraint: preferred(rackKey), groups: workers(4, "2")})
		onlyOn(t, e.waitBound("fits", 4), e.nodesWithLabel(rackKey, "r2"), "fits (r2 and r3 are equally tight; r2 sorts first)")
		// 16 CPU: no rack holds it any more. It is still placed, most of it in the rack that
		// holds most (r1, 12 CPU), the rest in r3.
		e.createGang(gang{name: "spill", constraint: preferred(rackKey), groups: workers(8, "2")})
		p := e.waitBound("spill", 8)
		r1 := e.nodesWithLabel(rackKey, "r1")
		inR1 := 0
		for n, count := range p.nodes {
			if r1[n] {
				inR1 += count
			}
		}
		assert.Equal(t, 6, inR1)
		e.waitScheduledCondition("spill", metav1.ConditionTrue, "8 of 8 required pods are bound")
		assert.Equal(t, 0.5, *e.podGang("spill").Status.PlacementScore, "two racks")
	})

	t.Run("preferred on a cluster the scheduler samples: every gang lands in one rack", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		// 300 nodes: kube-scheduler stops filtering after about half of them
		// (percentageOfNodesToScore), so Score alone would often not see the preferred rack.
		var nodes []node
		for r := range 12 {
			for i := range 25 {
				nodes = append(nodes, rack(fmt.Sprintf("r%d-n%d", r, i), "4", fmt.Sprintf("r%d", r)))
			}
		}
		e.addNodes(nodes...)
		// 10 gangs of 16 one-CPU pods (4 nodes' worth), all at once: each fits one rack.
		for i := range 10 {
			e.createGang(gang{name: fmt.Sprintf("g%d", i), constraint: preferred(rackKey), groups: workers(16, "1")})
		}
		for i := range 10 {
			p := e.waitBound(fmt.Sprintf("g%d", i), 16)
			racks := map[string]int{}
			for n, count := range p.nodes {
				racks[strings.SplitN(strings.TrimPrefix(n, e.ns+"-"), "-", 2)[0]] += count
			}
			assert.Len(t, racks, 1, "gang g%d spans racks: %v", i, racks)
		}
	})

	t.Run("preferred: a member that fits no node of the preferred rack lets the gang search every node", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		r1 := e.addNodes(rack("a", "4", "r1"), rack("b", "4", "r1"))
		e.addNodes(rack("c", "4", "r2"), rack("d", "4", "r2"), rack("e", "4", "r2"), rack("f", "4", "r2"))
		hostPort := func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}
		// r1 has the CPU for the gang (the tightest rack by capacity), but its host ports are
		// taken by a pod of another scheduler.
		for i, n := range r1 {
			occupier := e.memberPod(gang{name: "occupier"}, group{name: "o", cpu: "0", pod: hostPort}, int32(i))
			occupier.Labels = nil
			occupier.Spec.NodeName = n
			e.createPods([]*v1.Pod{occupier})
		}
		e.createGang(gang{name: "ported", constraint: preferred(rackKey),
			groups: []group{{name: "w", min: 4, replicas: 4, cpu: "2", pod: hostPort}}})
		onlyOn(t, e.waitBound("ported", 4), e.nodesWithLabel(rackKey, "r2"), "ported")
	})

	t.Run("bound members pin the rack: extras wait for room there", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		e.addNodes(rack("a", "4", "r1"), rack("b", "8", "r2"), rack("c", "8", "r2"))
		// The quorum (2 pods of 2 CPU) fits r1 tightly; the 2 extras then must join it in r1,
		// although r2 has plenty of room.
		e.createGang(gang{name: "pinned", constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 4, cpu: "2"}}})
		onlyOn(t, e.waitBound("pinned", 2), e.nodesWithLabel(rackKey, "r1"), "quorum")
		e.eventually("the extras to be turned away for lack of room in r1", func() (bool, string) {
			var msgs []string
			for _, pod := range e.pods("pinned") {
				for _, c := range pod.Status.Conditions {
					if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
						msgs = append(msgs, c.Message)
					}
				}
			}
			// Depending on timing an extra is turned away by the domain check or finds no room
			// on r1's node; either way the nodes of r2 are out of bounds.
			pinnedAway := 0
			for _, m := range msgs {
				if strings.Contains(m, `within rack "r1" (topology.kubernetes.io/rack), where its members already run; it fits 0`) ||
					strings.Contains(m, "2 node(s) didn't satisfy plugin(s) [Topology]") {
					pinnedAway++
				}
			}
			return pinnedAway == 2, fmt.Sprint(msgs)
		})
		assert.Equal(t, 2, e.placement("pinned").pending)
		e.addNodes(rack("d", "4", "r1"))
		onlyOn(t, e.waitBound("pinned", 4), e.nodesWithLabel(rackKey, "r1"), "all members")
	})

	t.Run("no rack holds the gang although the cluster does: it stays pending and says why", func(t *testing.T) {
		e := newEnv(t, envOptions{})
		e.addNodes(rack("a", "4", "r1"), rack("b", "4", "r1"), rack("c", "4", "r2"), rack("d", "4", "r2"))
		e.createGang(gang{name: "wide", constraint: required(rackKey), groups: workers(6, "2")})
		e.waitScheduledCondition("wide", metav1.ConditionFalse,
			`the PodGang needs 6 pods of 2 CPU, 64Mi memory within one rack (topology.kubernetes.io/rack); the best rack, "r1", fits 4`)
		assert.Equal(t, 6, e.placement("wide").pending)
		events := e.gangEvents("wide", "GangUnschedulable")
		require.Len(t, events, 1)
	})
}

// PodGroups of one gang often run on different node pools — a router on CPU nodes, workers on
// tainted GPU nodes. The whole-gang checks count each PodGroup only on the nodes it may use.
// Judged by one member's rules the gangs below would never fit, whichever member comes first:
// the workers do not fit the CPU nodes, and the GPU nodes have room for the workers only.
func TestPodGroupsOnDifferentNodePools(t *testing.T) {
	const poolKey = "example.com/pool"
	gpuTaint := v1.Taint{Key: "example.com/gpu", Effect: v1.TaintEffectNoSchedule}
	pool := func(name, cpu, rackValue, p string) node {
		n := node{name: name, cpu: cpu, labels: map[string]string{rackKey: rackValue, poolKey: p}}
		if p == "gpu" {
			n.taints = []v1.Taint{gpuTaint}
		}
		return n
	}
	groups := func() []group {
		return []group{
			{name: "router", min: 1, replicas: 1, cpu: "1", pod: func(p *v1.Pod) {
				p.Spec.NodeSelector = map[string]string{poolKey: "cpu"}
			}},
			{name: "worker", min: 4, replicas: 4, cpu: "4", pod: func(p *v1.Pod) {
				p.Spec.NodeSelector = map[string]string{poolKey: "gpu"}
				p.Spec.Tolerations = []v1.Toleration{{Key: gpuTaint.Key, Operator: v1.TolerationOpExists}}
			}},
		}
	}
	e := newEnv(t, envOptions{})
	// r1 is the tightest rack by CPU but has no CPU node for the router; r2 holds the gang,
	// its GPU nodes exactly the workers.
	// c4 is in no rack: room for routers of gangs without a pack constraint.
	e.addNodes(pool("g1", "8", "r1", "gpu"), pool("g2", "8", "r1", "gpu"),
		pool("c3", "2", "r2", "cpu"), pool("g3", "8", "r2", "gpu"), pool("g4", "8", "r2", "gpu"),
		node{name: "c4", cpu: "2", labels: map[string]string{poolKey: "cpu"}})
	e.createGang(gang{name: "packed", constraint: required(rackKey), groups: groups()})
	onlyOn(t, e.waitBound("packed", 5), e.nodesWithLabel(rackKey, "r2"), "packed")
	e.waitScheduledCondition("packed", metav1.ConditionTrue, "5 of 5 required pods are bound")

	// Without a pack constraint the gang plugin's own pre-check decides: r1's GPU nodes hold
	// the workers, a CPU node the router.
	e.createGang(gang{name: "loose", groups: groups()})
	p := e.waitBound("loose", 5)
	assert.Equal(t, map[string]int{"router": 1, "worker": 4}, p.bound)

	// A PodGroup no node admits leaves the gang whole-pending, saying so before any member is
	// assumed.
	e.createGang(gang{name: "nopool", groups: []group{{name: "router", min: 1, replicas: 1, cpu: "1"},
		{name: "worker", min: 1, replicas: 1, cpu: "1", pod: func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{poolKey: "tpu"}
		}}}})
	e.waitScheduledCondition("nopool", metav1.ConditionFalse, "the PodGang needs 2 pods of 1 CPU, 64Mi memory; the nodes it may use fit 1")
	assert.Equal(t, 0, e.placement("nopool").total())
}
