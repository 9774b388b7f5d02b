package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/bench/gangwatch"
	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Recovery rows: a PodCliqueSet of multi-node gangs, each replica packed into one rack and the
// replicas spread over the racks, loses some of its nodes in each round. A failed node is what
// a dead kubelet leaves: kwok stops heartbeating it, and it gets what the node lifecycle
// controller would give it (Ready Unknown, the unreachable taints). Each affected replica is
// timed from the nodes' Ready transition until its lost pods are deleted, their replacements
// created and bound, and every pod of the replica Ready again; every pod that was not on a
// failed node must keep its UID. The failed nodes come back, empty, before the next round.

const (
	// recoveryPrefix starts the names of the recovery rows.
	recoveryPrefix = "node failure"
	// benchTopology is the ClusterTopology of the benchmark's fabric.
	benchTopology = "bench-fabric"
	// nodeFailureGrace is the operator's nodeFailure.grace in the benchmark (shipped: 30s), so
	// that a round does not wait half a minute for what is only a timer.
	nodeFailureGrace = 5 * time.Second
	// nodeFailureBackOff is its nodeFailure.initialBackOff (shipped: 10s): a replica hit again
	// in a later round is not held back by its replacement in an earlier one.
	nodeFailureBackOff = time.Second
	// recoveryGoal is the bound on replacements bound after the node is declared failed.
	recoveryGoal = 5 * time.Second
)

// Phases of a replica's recovery, in order, as keys of Recovery.Phases.
const (
	PDeleted = "deleted"
	PCreated = "created"
	PBound   = "bound"
	PWhole   = "whole"
)

var recoveryPhases = []string{PDeleted, PCreated, PBound, PWhole}

// Recovery is what one round of node failures measured.
type Recovery struct {
	FailedNodes int `json:"failedNodes"`
	Nodes       int `json:"nodes"`
	// Replicas is the number of replicas with a pod on a failed node; PodsLost their pods there.
	Replicas              int     `json:"replicas"`
	PodsLost              int     `json:"podsLost"`
	GraceSeconds          float64 `json:"graceSeconds"`
	InitialBackOffSeconds float64 `json:"initialBackOffSeconds"`
	// Phases are, per affected replica, the seconds from the nodes' Ready transition until the
	// replica's pods on failed nodes are deleted, their replacements created, bound, and every
	// pod of the replica is Ready.
	Phases map[string]gangwatch.Percentiles `json:"phases"`
	// BoundAfterFailed is, per affected replica, the seconds from the nodes being declared
	// failed (the transition plus nodeFailure.grace) until its replacements are bound.
	BoundAfterFailed gangwatch.Percentiles `json:"boundAfterFailed"`
	// Unneeded counts the pods deleted that were not on a failed node (goal 0): the UIDs of the
	// namespace's pods before the round, against those after it.
	Unneeded int `json:"unneededRestarts"`
}

// recoveryPodCPU sizes the pods: 16 fit a 64-CPU node, so a rack of 10 nodes holds its 5
// replicas of 20 pods with room for the replacements of two of its nodes.
const recoveryPodCPU = "4"

// recoveryPCS is replicas × a gang of a leader and 19 workers, each replica packed into one
// rack and the replicas spread evenly over the racks.
func recoveryPCS(ns, name string, replicas int32) *corev1alpha1.PodCliqueSet {
	cliques := []*corev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 19)}
	for _, c := range cliques {
		c.Spec.PodSpec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(recoveryPodCPU)
	}
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: replicas, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: cliques,
			TopologyConstraint: &corev1alpha1.TopologyConstraint{
				TopologyName: benchTopology, Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"},
				ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{
					{Domain: "rack", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway, MaxSkew: ptr.To[int32](1)}},
			},
		}},
	}
}

// topology creates the benchmark's ClusterTopology (the kwok nodes' zone, block, rack and host
// labels) unless it exists.
func (b *bench) topology(ctx context.Context) error {
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: benchTopology}, Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
		{Domain: "zone", Key: framework.ZoneKey}, {Domain: "block", Key: framework.BlockKey},
		{Domain: "rack", Key: framework.RackKey}, {Domain: "host", Key: framework.HostKey}}}}
	if err := b.admin.Create(ctx, ct); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// recoveryWorkloads applies the recovery PodCliqueSet, runs one round per entry of the scale's
// RecoveryRounds and deletes it.
func (b *bench) recoveryWorkloads(ctx context.Context) error {
	s := b.scale
	ns, name := "pcs-recovery", "recovery"
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	if err := b.topology(ctx); err != nil {
		return err
	}
	n := int(20 * s.RecoveryReplicas)
	if err := b.measure(ctx, fmt.Sprintf("apply PCS %d×20, one rack per replica", s.RecoveryReplicas), "grove", n, growMilestones,
		expectation{ns: ns, want: n, grove: true}, groveTimeout, func(ctx context.Context) error {
			return b.admin.Create(ctx, recoveryPCS(ns, name, s.RecoveryReplicas))
		}); err != nil {
		return err
	}
	used := map[string]bool{}
	for _, k := range s.RecoveryRounds {
		if err := b.recoveryRound(ctx, ns, name, n, k, used); err != nil {
			return err
		}
	}
	return b.deletePCS(ctx, ns, n, "delete recovery PCS")
}

// replicaRound is one affected replica in a round.
type replicaRound struct {
	size    int
	lost    map[types.UID]bool
	reached map[string]time.Duration
}

// recoveryRound fails k nodes (none failed in an earlier round, spread over the racks) at once
// and measures the recovery of every replica that had pods on them.
func (b *bench) recoveryRound(ctx context.Context, ns, name string, pods, k int, used map[string]bool) error {
	before := &corev1.PodList{}
	if err := b.cache.List(ctx, before, client.InNamespace(ns)); err != nil {
		return err
	}
	nodes := &corev1.NodeList{}
	if err := b.admin.List(ctx, nodes); err != nil {
		return err
	}
	victims, err := pickNodes(nodes.Items, before.Items, k, used)
	if err != nil {
		return err
	}
	failed := map[string]bool{}
	for _, v := range victims {
		failed[v], used[v] = true, true
	}
	old := map[types.UID]bool{}
	replicas := map[int]*replicaRound{}
	for i := range before.Items {
		p := &before.Items[i]
		old[p.UID] = true
		ri, ok := common.IntLabel(p, apicommon.LabelPodCliqueSetReplicaIndex)
		if !ok {
			continue
		}
		rr := replicas[ri]
		if rr == nil {
			rr = &replicaRound{lost: map[types.UID]bool{}, reached: map[string]time.Duration{}}
			replicas[ri] = rr
		}
		rr.size++
		if failed[p.Spec.NodeName] {
			rr.lost[p.UID] = true
		}
	}
	lost := 0
	maps.DeleteFunc(replicas, func(_ int, rr *replicaRound) bool { return len(rr.lost) == 0 })
	for _, rr := range replicas {
		lost += len(rr.lost)
	}

	// The operator reads the transition at the API's one-second resolution: the nodes fail on
	// a whole second, so that the time it reads is when they failed.
	t0 := time.Now().Truncate(time.Second).Add(time.Second)
	r := &Result{Name: fmt.Sprintf("%s: %d of %d nodes", recoveryPrefix, k, len(nodes.Items)), Kind: "grove", Pods: lost,
		Order: []string{MCreated, MBound, MReady}, Milestones: map[string]float64{}}
	b.results = append(b.results, r)
	fmt.Printf(">> %s (%d pods of %d replicas)\n", r.Name, lost, len(replicas))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t0)):
	}
	pid := b.env.Operator.PID()
	cpu0, _ := cpuSeconds(pid)
	req0, _ := b.apiserverRequests(ctx)
	r.Start = t0
	if err := parallel(ctx, len(victims), 16, func(ctx context.Context, i int) error {
		return b.failNode(ctx, victims[i], metav1.NewTime(t0))
	}); err != nil {
		return err
	}
	fmt.Printf("   %d nodes failed %.2fs after the transition they carry\n", len(victims), time.Since(t0).Seconds())
	err = b.trackRecovery(ctx, ns, t0, old, failed, replicas)
	r.End = time.Now()
	cpu1, _ := cpuSeconds(pid)
	r.OperatorCPUSeconds = cpu1 - cpu0
	if req1, rerr := b.apiserverRequests(ctx); rerr == nil {
		r.APIServerRequests = req1 - req0
	}
	rec := &Recovery{FailedNodes: len(victims), Nodes: len(nodes.Items), Replicas: len(replicas), PodsLost: lost,
		GraceSeconds: nodeFailureGrace.Seconds(), InitialBackOffSeconds: nodeFailureBackOff.Seconds(), Phases: map[string]gangwatch.Percentiles{}}
	r.Recovery = rec
	for _, ph := range recoveryPhases {
		var vs []float64
		for _, rr := range replicas {
			if d, ok := rr.reached[ph]; ok {
				vs = append(vs, d.Seconds())
			}
		}
		if len(vs) == len(replicas) {
			rec.Phases[ph] = gangwatch.PercentilesOf(vs)
		}
	}
	var after []float64
	for _, rr := range replicas {
		if d, ok := rr.reached[PBound]; ok {
			after = append(after, (d - nodeFailureGrace).Seconds())
		}
	}
	rec.BoundAfterFailed = gangwatch.PercentilesOf(after)
	for m, ph := range map[string]string{MCreated: PCreated, MBound: PBound, MReady: PWhole} {
		if p, ok := rec.Phases[ph]; ok {
			r.Milestones[m] = p.Max
		}
	}
	if err != nil {
		r.Error = err.Error()
		fmt.Printf("   error: %v\n", err)
		return err
	}

	// Healthy again: the nodes back, every pod Ready, no replica the operator still replaces.
	for _, v := range victims {
		if err := b.restoreNode(ctx, v); err != nil {
			return err
		}
	}
	if err := b.waitHealthy(ctx, ns, name, pods); err != nil {
		return err
	}
	live, err := b.podUIDs(ctx, ns)
	if err != nil {
		return err
	}
	for i := range before.Items {
		p := &before.Items[i]
		if !failed[p.Spec.NodeName] && !live[p.UID] {
			rec.Unneeded++
		}
	}
	fmt.Printf("   %s\n", strings.Join(recoveryRow(rec)[3:], ", "))
	if rec.Unneeded > 0 {
		return fmt.Errorf("%s: %d pods not on a failed node were deleted", r.Name, rec.Unneeded)
	}
	return nil
}

// trackRecovery polls the cache every 50ms until every affected replica is whole, recording
// when each reaches each phase (since t0).
func (b *bench) trackRecovery(ctx context.Context, ns string, t0 time.Time, old map[types.UID]bool, failed map[string]bool, replicas map[int]*replicaRound) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods := &corev1.PodList{}
		if err := b.cache.List(ctx, pods, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		now := time.Since(t0)
		type counts struct{ lostLeft, fresh, bound, ready int }
		byReplica := map[int]*counts{}
		for i := range pods.Items {
			p := &pods.Items[i]
			ri, ok := common.IntLabel(p, apicommon.LabelPodCliqueSetReplicaIndex)
			rr := replicas[ri]
			if !ok || rr == nil || p.DeletionTimestamp != nil {
				continue
			}
			c := byReplica[ri]
			if c == nil {
				c = &counts{}
				byReplica[ri] = c
			}
			if rr.lost[p.UID] {
				c.lostLeft++
			}
			if !old[p.UID] {
				c.fresh++
				if p.Spec.NodeName != "" {
					c.bound++
				}
			}
			if p.Spec.NodeName != "" && !failed[p.Spec.NodeName] && common.IsReady(p) {
				c.ready++
			}
		}
		whole := 0
		for ri, rr := range replicas {
			c := byReplica[ri]
			if c == nil {
				c = &counts{}
			}
			for ph, ok := range map[string]bool{PDeleted: c.lostLeft == 0, PCreated: c.fresh >= len(rr.lost),
				PBound: c.bound >= len(rr.lost), PWhole: c.ready >= rr.size} {
				if _, done := rr.reached[ph]; ok && !done {
					rr.reached[ph] = now
				}
			}
			if _, ok := rr.reached[PWhole]; ok {
				whole++
			}
		}
		if whole == len(replicas) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out: %d of %d affected replicas whole", whole, len(replicas))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// pickNodes chooses k nodes that run pods and were not chosen before, round-robin over the
// racks (at most ⌈k/racks⌉ from one rack, so the replacements fit in their racks).
func pickNodes(nodes []corev1.Node, pods []corev1.Pod, k int, used map[string]bool) ([]string, error) {
	busy := map[string]bool{}
	for i := range pods {
		busy[pods[i].Spec.NodeName] = true
	}
	byRack := map[string][]string{}
	for i := range nodes {
		if n := nodes[i].Name; busy[n] && !used[n] {
			rack := nodes[i].Labels[framework.RackKey]
			byRack[rack] = append(byRack[rack], n)
		}
	}
	racks := slices.Sorted(maps.Keys(byRack))
	for _, rack := range racks {
		slices.Sort(byRack[rack])
	}
	var out []string
	for j := 0; len(out) < k; j++ {
		took := false
		for _, rack := range racks {
			if j < len(byRack[rack]) && len(out) < k {
				out = append(out, byRack[rack][j])
				took = true
			}
		}
		if !took {
			return nil, fmt.Errorf("only %d nodes run pods and have not failed yet, %d wanted", len(out), k)
		}
	}
	return out, nil
}

// failNode makes a kwok node look like one whose kubelet died at `at`: kwok stops managing it
// (no heartbeat sets it Ready again), and it gets what the node lifecycle controller (not run
// here) would give it: the unreachable taints and Ready Unknown.
func (b *bench) failNode(ctx context.Context, name string, at metav1.Time) error {
	if err := b.updateNode(ctx, name, func(n *corev1.Node) {
		delete(n.Annotations, cluster.KwokNodeAnnotation)
		n.Spec.Taints = append(n.Spec.Taints,
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(at)})
	}, nil); err != nil {
		return err
	}
	return b.updateNode(ctx, name, nil, func(n *corev1.Node) { setReady(n, corev1.ConditionUnknown, "NodeStatusUnknown", at) })
}

// restoreNode brings a failed node back, Ready and managed by kwok again.
func (b *bench) restoreNode(ctx context.Context, name string) error {
	if err := b.updateNode(ctx, name, nil, func(n *corev1.Node) { setReady(n, corev1.ConditionTrue, "KubeletReady", metav1.Now()) }); err != nil {
		return err
	}
	return b.updateNode(ctx, name, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable })
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[cluster.KwokNodeAnnotation] = cluster.KwokNodeAnnotationValue
	}, nil)
}

// updateNode applies spec (an update) or status (a status update) to a node, retrying on conflict.
func (b *bench) updateNode(ctx context.Context, name string, spec, status func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := b.admin.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if spec != nil {
			spec(n)
			return b.admin.Update(ctx, n)
		}
		status(n)
		return b.admin.Status().Update(ctx, n)
	})
}

func setReady(n *corev1.Node, s corev1.ConditionStatus, reason string, at metav1.Time) {
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady {
			c.Status, c.Reason, c.LastTransitionTime, c.LastHeartbeatTime = s, reason, at, at
		}
	}
}

// waitHealthy waits until the namespace has its pods all Ready and none terminating, and the
// PodCliqueSet replaces no member.
func (b *bench) waitHealthy(ctx context.Context, ns, name string, want int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods := &corev1.PodList{}
		if err := b.cache.List(ctx, pods, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		ready := 0
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && common.IsReady(p) {
				ready++
			}
		}
		pcs := &corev1alpha1.PodCliqueSet{}
		if err := b.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err != nil {
			return err
		}
		replacing := meta.IsStatusConditionTrue(pcs.Status.Conditions, apicommon.ConditionMemberReplacing)
		if ready == want && len(pods.Items) == want && !replacing {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after the round: %d of %d pods ready (%d in all), MemberReplacing %v", ready, want, len(pods.Items), replacing)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// recoveryRow is one round's line of the recovery tables.
func recoveryRow(rec *Recovery) []string {
	row := []string{fmt.Sprintf("%d of %d", rec.FailedNodes, rec.Nodes), fmt.Sprint(rec.Replicas), fmt.Sprint(rec.PodsLost)}
	for _, ph := range recoveryPhases {
		p, reached := rec.Phases[ph]
		row = append(row, pcts(p, reached))
	}
	_, bound := rec.Phases[PBound]
	return append(row, pcts(rec.BoundAfterFailed, bound), fmt.Sprint(rec.Unneeded))
}

// pcts is "median / p99" in seconds.
func pcts(p gangwatch.Percentiles, reached bool) string {
	if !reached {
		return "not reached"
	}
	return fmt.Sprintf("%.1f / %.1f", p.P50, p.P99)
}

var recoveryHeads = []string{"failed nodes", "replicas hit", "pods lost", "lost pods deleted", "replacements created",
	"replacements bound", "replica whole (all Ready)", "bound after declared failed", "pods restarted needlessly"}

// recoveryRows are the recovery rounds' lines.
func (rep *Report) recoveryRows() [][]string {
	var out [][]string
	for _, r := range rep.Results {
		if r.Recovery != nil {
			out = append(out, recoveryRow(r.Recovery))
		}
	}
	return out
}
