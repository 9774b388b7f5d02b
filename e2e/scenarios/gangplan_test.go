//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The scenarios of one plan per gang group (issue 39), in the shapes of upstream Grove's own
// gang and topology e2e workloads: kwok nodes of 4 CPU / 150Mi carrying a taint only the
// workload tolerates, created cordoned and opened a few at a time, and exact bound counts that
// must hold through a settle window (a count that is reached and then grows, or that is reached
// only by a lucky race, fails).

// settle is how long a bound count must stay exactly as expected once reached.
const settle = 20 * time.Second

// workloadTaint keeps everything but the scenario's workload off its nodes.
var workloadTaint = corev1.Taint{Key: "grove.io/e2e-workload", Value: "gangplan", Effect: corev1.TaintEffectNoSchedule}

// workloadShape is upstream's e2e worker node: 4 CPU, 150Mi.
var workloadShape = map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "150Mi"}

// cordonedNode is a workload node that takes no pod until uncordoned.
type cordonedNode struct {
	name   string
	labels map[string]string
}

func createCordoned(t *testing.T, env *framework.Env, nodes ...cordonedNode) []string {
	t.Helper()
	names := make([]string, len(nodes))
	for i, n := range nodes {
		node := cluster.FakeNode(n.name, n.labels, workloadShape)
		node.Spec.Unschedulable = true
		node.Spec.Taints = []corev1.Taint{workloadTaint}
		require.NoError(t, env.Client.Create(context.Background(), node))
		names[i] = n.name
	}
	return names
}

// uncordon opens nodes, one API write each, as `kubectl uncordon` does.
func uncordon(t *testing.T, env *framework.Env, names ...string) {
	t.Helper()
	for _, name := range names {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := env.Clientset.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Unschedulable = false
			_, err = env.Clientset.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
			return err
		}))
	}
}

// forWorkload makes every clique tolerate the workload taint and ask for mem of memory and a
// tenth of a CPU (memory decides how many pods share a 150Mi node).
func forWorkload(p *corev1alpha1.PodCliqueSet, mem string) *corev1alpha1.PodCliqueSet {
	for _, c := range p.Spec.Template.Cliques {
		spec := &c.Spec.PodSpec
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: workloadTaint.Key, Operator: corev1.TolerationOpEqual,
			Value: workloadTaint.Value, Effect: workloadTaint.Effect})
		spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	return p
}

// holdBound waits until exactly want pods of the PodCliqueSet are bound and total exist, then
// requires that to stay so for the settle window.
func holdBound(t *testing.T, env *framework.Env, ns, pcsName string, total, want int) {
	t.Helper()
	count := func() (int, int) {
		pods := livePods(podsOf(t, env, ns, pcsName))
		return len(pods), countBound(pods)
	}
	if !assert.Eventually(t, func() bool {
		n, b := count()
		return n == total && b == want
	}, 2*time.Minute, 250*time.Millisecond, "want %d of %d pods of %s bound", want, total, pcsName) {
		n, b := count()
		t.Fatalf("%d of %d pods bound, want %d\n%s", b, n, want, dumpGangs(t, env, ns, pcsName))
	}
	deadline := time.Now().Add(settle)
	for time.Now().Before(deadline) {
		n, b := count()
		require.Equal(t, [2]int{total, want}, [2]int{n, b}, "pods and bound pods of %s left %d/%d within the settle window\n%s",
			pcsName, total, want, dumpGangs(t, env, ns, pcsName))
		time.Sleep(500 * time.Millisecond)
	}
}

// dumpGangs lists each PodGang's Scheduled condition and the pods' nodes.
func dumpGangs(t *testing.T, env *framework.Env, ns, pcsName string) string {
	out := ""
	for _, pod := range podsOf(t, env, ns, pcsName) {
		out += fmt.Sprintf("pod %s gang=%s node=%q gates=%d\n", pod.Name, pod.Labels[common.LabelPodGang], pod.Spec.NodeName, len(pod.Spec.SchedulingGates))
	}
	seen := map[string]bool{}
	for _, pod := range podsOf(t, env, ns, pcsName) {
		g := pod.Labels[common.LabelPodGang]
		if seen[g] {
			continue
		}
		seen[g] = true
		for _, c := range podGang(env, ns, g).Status.Conditions {
			if c.Type == "Scheduled" {
				out += fmt.Sprintf("PodGang %s Scheduled=%s: %s\n", g, c.Status, c.Message)
			}
		}
	}
	return out
}

// plainNodes are n unlabelled workload nodes w-0 ... w-<n-1>.
func plainNodes(n int) []cordonedNode {
	out := make([]cordonedNode, n)
	for i := range out {
		out[i] = cordonedNode{name: fmt.Sprintf("w-%02d", i)}
	}
	return out
}

// upstreamWorkload2 is the shape of upstream's gang-semantics workload with minimums: a
// standalone clique pc-a (2 pods, minAvailable 1) and a scaling group sg-x (2 replicas,
// minAvailable 1) of pc-b (1 pod) and pc-c (3 pods, minAvailable 1); 80Mi pods, one per node.
// Its base PodGang has 6 pods and a quorum of 3; each scaled PodGang 4 pods and a quorum of 2.
func upstreamWorkload2(ns, name string) *corev1alpha1.PodCliqueSet {
	p := pcs(ns, name, 1, clique("pc-a", 2, "1", minAvailable(1)), clique("pc-b", 1, "1"), clique("pc-c", 3, "1", minAvailable(1)))
	return forWorkload(withGroup(p, "sg-x", 2, 1, "pc-b", "pc-c"), "80Mi")
}

// Scenario 1 of issue 39: two deferral rules that waited on each other. Replica 0's base
// quorum lands on the first 3 nodes and its scaled gang (quorum 2) then waits for room; the
// PodCliqueSet is scaled to 2 replicas. When 3 more nodes open, replica 1's base quorum must
// land (6), although the older scaled gang of replica 0 fits the room too — every replica's
// minimum before any replica's scale-out — and never wait on that scaled gang while the scaled
// gang waits on it. Then the scaled quorums (10), then everything (20).
func TestBaseQuorumsNeverWaitOnScaleOut(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ns := env.Cluster.TestNamespace(t)
	nodes := createCordoned(t, env, plainNodes(20)...)
	uncordon(t, env, nodes[:2]...)
	require.NoError(t, env.Client.Create(context.Background(), upstreamWorkload2(ns, "wl2")))
	holdBound(t, env, ns, "wl2", 10, 0)

	uncordon(t, env, nodes[2])
	holdBound(t, env, ns, "wl2", 10, 3)
	waitScheduled(t, env, ns, common.BasePodGangName("wl2", 0))
	scaleTo(t, env, pcsRef(ns, "wl2"), 2)
	holdBound(t, env, ns, "wl2", 20, 3)

	// One node at a time, as upstream's e2e uncordons them.
	for _, n := range nodes[3:6] {
		uncordon(t, env, n)
	}
	holdBound(t, env, ns, "wl2", 20, 6)
	waitScheduled(t, env, ns, common.BasePodGangName("wl2", 1))
	// Room for both scaled quorums (2 pods each), none of the elastic pods.
	for _, n := range nodes[6:10] {
		uncordon(t, env, n)
	}
	holdBound(t, env, ns, "wl2", 20, 10)
	uncordon(t, env, nodes[10:]...)
	holdBound(t, env, ns, "wl2", 20, 20)
	w.assertNoPartialGang()
}

// Scenario 2 of issue 39: a PodCliqueSet-wide block is chosen for the whole group. Ten pairs of
// 40Mi workers, each pair on one host (one pair per 150Mi node), the replica in one block; the
// base gang has three pairs, seven scaled gangs one pair each. Of a block of 8 nodes and one of
// 20, only the 20-node block holds the replica: every pod lands there (the tightest block for
// the base gang alone, the 8-node one, would leave 2 scaled gangs out for good).
func TestPodCliqueSetBlockHoldsTheWholeReplica(t *testing.T) {
	// grove-scheduler starts once every PodGang of the replica exists: what the first gang
	// placed sees of its group does not depend on how fast the operator creates them.
	env, w := startEnv(t, framework.Options{WithoutScheduler: true})
	ns := env.Cluster.TestNamespace(t)
	fabricTopology(t, env, "fabric")
	var nodes []cordonedNode
	for b, size := range []int{20, 8} {
		for h := 0; h < size; h++ {
			block := fmt.Sprintf("z0-b%d", b)
			rack := fmt.Sprintf("%s-r%d", block, h/4)
			nodes = append(nodes, cordonedNode{name: fmt.Sprintf("%s-h%02d", block, h),
				labels: map[string]string{framework.ZoneKey: "z0", framework.BlockKey: block, framework.RackKey: rack}})
		}
	}
	uncordon(t, env, createCordoned(t, env, nodes...)...)
	p := withTopology(pcs(ns, "pairs", 1, clique("worker", 2, "1", cliqueRequired("host"))), "fabric", "block", "")
	p = forWorkload(withGroup(p, "workers", 10, 3, "worker"), "40Mi")
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, p))
	require.Eventually(t, func() bool {
		var gangs schedv1alpha1.PodGangList
		return env.Client.List(ctx, &gangs, client.InNamespace(ns)) == nil && len(gangs.Items) == 8
	}, 2*time.Minute, 250*time.Millisecond, "the base PodGang and 7 scaled ones")
	require.NoError(t, env.StartScheduler(ctx))

	holdBound(t, env, ns, "pairs", 20, 20)
	blocks := labelsOfBoundPods(env, podsOf(t, env, ns, "pairs"), framework.BlockKey)
	assert.Equal(t, map[string]int{"z0-b0": 20}, blocks, "the replica's pods by block")
	w.assertNoPartialGang()
}

// leaderWorker is scenario 3's PodCliqueSet: PodCliqueSet-wide block packing, a router of 2
// and two scaling groups (2 replicas, minAvailable 1, rack packing) of a leader and a worker,
// each with required anti-affinity on the host against its clique in group replica 0.
func leaderWorker(ns, name string) *corev1alpha1.PodCliqueSet {
	var cliques []*corev1alpha1.PodCliqueTemplateSpec
	cliques = append(cliques, clique("router", 2, "1"))
	for _, g := range []string{"prefill", "decode"} {
		for _, role := range []string{"leader", "worker"} {
			c := clique(g+"-"+role, 1, "1")
			first := common.ScalingGroupPodCliqueName(common.PodCliqueScalingGroupName(name, 0, g), 0, c.Name)
			c.Spec.PodSpec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey:   corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{common.LabelPodClique: first}},
				}}}}
			cliques = append(cliques, c)
		}
	}
	p := withTopology(pcs(ns, name, 1, cliques...), "fabric", "block", "")
	for _, g := range []string{"prefill", "decode"} {
		p = withGroup(p, g, 2, 1, g+"-leader", g+"-worker")
		group(p, g).TopologyConstraint = pack("", "rack", "")
	}
	return forWorkload(p, "10Mi")
}

// Scenario 3 of issue 39: the domain is checked with the real filters and revised. Rack r0
// straddles two blocks, so in block b0 it is a single node; the base gang puts both groups'
// replica 0 there (the tightest rack), and each scaled gang, whose anti-affinity rejects that
// node, must go to the other rack of the pinned block rather than wait forever.
func TestDomainRejectedByAFilterIsRevised(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ns := env.Cluster.TestNamespace(t)
	fabricTopology(t, env, "fabric")
	names := createCordoned(t, env, straddlingRacks()...)
	require.NoError(t, env.Client.Create(context.Background(), leaderWorker(ns, "lw")))
	holdBound(t, env, ns, "lw", 10, 0)

	uncordon(t, env, names...)
	holdBound(t, env, ns, "lw", 10, 10)
	blocks := labelsOfBoundPods(env, podsOf(t, env, ns, "lw"), framework.BlockKey)
	assert.Len(t, blocks, 1, "the replica's pods by block: %v", blocks)
	w.assertNoPartialGang()
}

// straddlingRacks: block b0 holds rack r0 on one node and rack r1 on three; block b1 holds
// rack r0 on three nodes (r0 straddles the blocks) and rack r2 on three.
func straddlingRacks() []cordonedNode {
	var nodes []cordonedNode
	add := func(block, rack string, n int) {
		for h := 0; h < n; h++ {
			nodes = append(nodes, cordonedNode{name: fmt.Sprintf("%s-%s-h%d", block, rack, h),
				labels: map[string]string{framework.ZoneKey: "z0", framework.BlockKey: block, framework.RackKey: rack}})
		}
	}
	add("b0", "r0", 1)
	add("b0", "r1", 3)
	add("b1", "r0", 3)
	add("b1", "r2", 3)
	return nodes
}

// Scenario 4 of issue 39: a gang that cannot be placed waits for an event. On a single node
// the scaled gangs' anti-affinity rejects the only node of their block, so they cannot be
// placed at all, while counted capacity says they fit: their pods must be attempted a few times
// (the framework's back-off), not hundreds of times a second.
func TestUnplaceableGangIsNotRetriedInALoop(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ns := env.Cluster.TestNamespace(t)
	fabricTopology(t, env, "fabric")
	names := createCordoned(t, env, cordonedNode{name: "b0-r0-h0",
		labels: map[string]string{framework.ZoneKey: "z0", framework.BlockKey: "b0", framework.RackKey: "r0"}})
	require.NoError(t, env.Client.Create(context.Background(), leaderWorker(ns, "stuck")))
	holdBound(t, env, ns, "stuck", 10, 0)
	uncordon(t, env, names...)
	// The base gang lands; the two scaled gangs (4 pods) cannot.
	holdBound(t, env, ns, "stuck", 10, 6)

	ctx := context.Background()
	attempts := func() float64 {
		var sum float64
		for _, result := range []string{"unschedulable", "error"} {
			v, err := env.SchedulerMetric(ctx, "scheduler_schedule_attempts_total", map[string]string{"result": result})
			require.NoError(t, err)
			sum += v
		}
		return sum
	}
	const window = 45 * time.Second
	before := attempts()
	time.Sleep(window)
	after := attempts()
	require.Equal(t, 6, countBound(livePods(podsOf(t, env, ns, "stuck"))))
	// The framework's back-off (1 s doubling to 10 s) allows about 6 attempts of an
	// unschedulable pod in this window if it were requeued on every expiry; a stuck gang
	// with no event is requeued less still.
	perPod := (after - before) / 4
	t.Logf("%.0f failed attempts in %s, %.1f per stuck pod", after-before, window, perPod)
	assert.LessOrEqual(t, perPod, 6.0, "failed scheduling attempts per stuck pod in %s\n%s", window, dumpGangs(t, env, ns, "stuck"))
	w.assertNoPartialGang()
}
