package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// IndexPodNodeName indexes the (managed) pods in the cache by the node they are bound to, so a
// node's failure maps to the PodCliqueSets with pods on it.
const IndexPodNodeName = "grove.io/spec.nodeName"

// nodeFailures replaces the pods a failed node took from a replica, so that one lost node costs
// its pods and not the replica (the ReplaceInDomain policy): the pods are deleted, their
// PodClique recreates them with the same index, and the scheduler places them next to the
// members that kept running. Nothing else of the replica is touched. Under RecreateGang the
// replica is recreated at once, as gang termination would after terminationDelay.
//
// A node has failed when its Ready condition has not been True, or it has carried the
// unreachable taint, for nodeFailure.grace, or when it is gone and its pods were bound at
// least that long ago. Pods of a node that is gone or unreachable are force-deleted when
// nodeFailure.forceDeletePods allows it: a dead kubelet never confirms a deletion, and a pod
// left Terminating keeps what its replacement needs. A node whose kubelet still reports (Ready
// False) gets graceful deletes.
//
// Each replica has a back-off between replacements (nodeFailure.initialBackOff doubling to
// maxBackOff) and a budget (maxReplacements); past it the replica is left to gang termination
// and its MemberReplacing condition says so. The count lives in status.nodeFailures, so it
// survives operator restarts.
type nodeFailures struct{ r *Reconciler }

func (*nodeFailures) Name() string { return "node-failure" }

func (c *nodeFailures) Delete(_ context.Context, st *state) error {
	c.r.nodeFailureMemo.Delete(st.stored.UID)
	return nil
}

// nodeHealth is what the operator concluded about one node.
type nodeHealth struct {
	// failed: the node is failed (past the grace).
	failed bool
	// unreachable: the node is gone or its kubelet stopped reporting; its pods may be
	// force-deleted.
	unreachable bool
	// since is when the node left Ready (or became unreachable, or the pod's binding for a
	// node that is gone); zero for a healthy node.
	since time.Time
	// why says how it failed, for events and conditions.
	why string
}

// replicaLoss is what failed nodes took from one replica.
type replicaLoss struct {
	// active are the live pods on failed nodes, terminating the ones already being deleted.
	active, terminating []*corev1.Pod
	nodes               map[string]nodeHealth
}

func (c *nodeFailures) config() configv1alpha1.NodeFailureConfiguration {
	cfg := *c.r.NodeFailure.DeepCopy()
	configv1alpha1.SetDefaultsNodeFailure(&cfg)
	return cfg
}

func (c *nodeFailures) Sync(ctx context.Context, st *state) error {
	cfg := c.config()
	now := c.r.now()
	pods, err := st.children.pods(ctx)
	if err != nil {
		return err
	}
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return err
	}
	cliques := map[types.UID]*corev1alpha1.PodClique{}
	for i := range pclqs {
		cliques[pclqs[i].UID] = &pclqs[i]
	}
	nodes := map[string]nodeHealth{}
	losses := map[int]*replicaLoss{}
	// ready counts each PodClique's ready pods on healthy nodes, from the pods themselves: a
	// PodClique's status lags its pods, and a replica must not pass for whole while its
	// replacement is still pending.
	ready := map[types.UID]int32{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !groveMember(p, st.stored, cliques) {
			continue
		}
		h, seen := nodes[p.Spec.NodeName]
		if !seen {
			if h, err = c.judge(ctx, p, cfg.Grace.Duration, now); err != nil {
				return err
			}
			nodes[p.Spec.NodeName] = h
		}
		if !h.failed {
			if !h.since.IsZero() {
				st.requeueAfter(h.since.Add(cfg.Grace.Duration).Sub(now))
			}
			if common.IsActive(p) && common.IsReady(p) && h.since.IsZero() {
				ready[metav1.GetControllerOf(p).UID]++
			}
			continue
		}
		r, ok := common.IntLabel(p, apicommon.LabelPodCliqueSetReplicaIndex)
		if !ok {
			continue
		}
		l := losses[r]
		if l == nil {
			l = &replicaLoss{nodes: map[string]nodeHealth{}}
			losses[r] = l
		}
		l.nodes[p.Spec.NodeName] = h
		if common.IsTerminating(p) {
			l.terminating = append(l.terminating, p)
		} else {
			l.active = append(l.active, p)
		}
	}
	// What this process computed last is never older than the status in the cache, which a
	// reconcile can read before it shows the last status write: the count and the back-off
	// must not be lost to it. After a restart the status is all there is.
	last := st.stored.Status.NodeFailures
	if m, ok := c.r.nodeFailureMemo.Load(st.stored.UID); ok {
		last = m.([]corev1alpha1.ReplicaNodeFailureStatus)
	}
	previous := map[int32]corev1alpha1.ReplicaNodeFailureStatus{}
	for _, e := range last {
		previous[e.ReplicaIndex] = e
	}
	var errs []error
	whole := &wholeness{c: c, st: st, ready: ready}
	entries := make([]corev1alpha1.ReplicaNodeFailureStatus, st.pcs.Spec.Replicas)
	var replacing []*replacement
	for i := range int(st.pcs.Spec.Replicas) {
		e, had := previous[int32(i)]
		if !had {
			e = corev1alpha1.ReplicaNodeFailureStatus{ReplicaIndex: int32(i)}
		}
		e = *e.DeepCopy()
		l := losses[i]
		// Stuck pods go whatever the back-off: their replacements exist already.
		errs = append(errs, c.forceDeleteStuck(ctx, st, l, cfg))
		var rp *replacement
		var err error
		e, rp, err = c.syncReplica(ctx, st, i, e, l, whole, cfg, now)
		errs = append(errs, err)
		entries[i] = e
		if rp != nil {
			replacing = append(replacing, rp)
		}
	}
	// The lost pods of every replica go at once: one failed node can take pods of many
	// replicas, and deleting them replica after replica made the last wait for all the others.
	errs = append(errs, c.replace(ctx, st, replacing, entries, cfg))
	var out []corev1alpha1.ReplicaNodeFailureStatus
	for _, e := range entries {
		if e.Replacements > 0 || len(e.FailedNodes) > 0 || e.BudgetExhausted {
			out = append(out, e)
		}
	}
	st.nodeFailures, st.nodeFailuresSynced = out, true
	if len(out) == 0 {
		c.r.nodeFailureMemo.Delete(st.stored.UID)
	} else {
		c.r.nodeFailureMemo.Store(st.stored.UID, out)
	}
	errs = append(errs, c.syncPodGangConditions(ctx, st, out))
	return errors.Join(errs...)
}

// syncReplica acts on what failed nodes took from replica i and returns its new status entry.
// Under ReplaceInDomain the deletes are returned, for the caller to make with every other
// replica's; the entry counts the replacement already (replace takes it back if they fail).
func (c *nodeFailures) syncReplica(ctx context.Context, st *state, i int, e corev1alpha1.ReplicaNodeFailureStatus, l *replicaLoss,
	whole *wholeness, cfg configv1alpha1.NodeFailureConfiguration, now time.Time) (corev1alpha1.ReplicaNodeFailureStatus, *replacement, error) {
	quiet := e.LastReplacementTime == nil || now.Sub(e.LastReplacementTime.Time) >= cfg.ResetAfter.Duration
	if quiet && len(e.FailedNodes) == 0 && (l == nil || len(l.active) == 0) {
		// A replica that went resetAfter without a replacement starts afresh.
		return corev1alpha1.ReplicaNodeFailureStatus{ReplicaIndex: e.ReplicaIndex}, nil, nil
	}
	if e.LastReplacementTime != nil && !quiet {
		st.requeueAfter(e.LastReplacementTime.Add(cfg.ResetAfter.Duration).Sub(now))
	}
	if l == nil || len(l.active) == 0 {
		if len(e.FailedNodes) > 0 && whole.replica(ctx, i) {
			d := now.Sub(ptr.Deref(e.FailedSince, metav1.NewTime(now)).Time)
			grovemetrics.MemberReplacementSeconds.Observe(d.Seconds())
			c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeNormal, apicommon.ReasonMembersReplaced, "ReplaceMembers",
				"replica %d is whole again %s after node %s failed", i, d.Round(time.Second), strings.Join(e.FailedNodes, ", "))
			e.FailedNodes, e.FailedSince = nil, nil
		}
		return e, nil, nil
	}
	for name, h := range l.nodes {
		if !slices.Contains(e.FailedNodes, name) {
			e.FailedNodes = append(e.FailedNodes, name)
		}
		if e.FailedSince == nil || h.since.Before(e.FailedSince.Time) {
			e.FailedSince = ptr.To(metav1.NewTime(h.since))
		}
	}
	sort.Strings(e.FailedNodes)
	if e.BudgetExhausted || e.Replacements >= ptr.Deref(cfg.MaxReplacements, configv1alpha1.DefaultNodeFailureMaxReplacements) {
		if !e.BudgetExhausted {
			c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, apicommon.ReasonReplacementBudgetExhausted, "ReplaceMembers",
				"replica %d used its %d replacements: the pods of failed node %s are not replaced; gang termination applies after terminationDelay",
				i, e.Replacements, strings.Join(e.FailedNodes, ", "))
		}
		e.BudgetExhausted = true
		return e, nil, nil
	}
	if e.Replacements > 0 && e.LastReplacementTime != nil && !sameIncident(l, e.LastReplacementTime.Time) {
		if next := e.LastReplacementTime.Add(backOff(cfg, e.Replacements)); now.Before(next) {
			st.setBackOff(i, next)
			st.requeueAfter(next.Sub(now))
			return e, nil, nil
		}
	}
	before := *e.DeepCopy()
	counted := e
	counted.Replacements++
	counted.LastReplacementTime = ptr.To(metav1.NewTime(now))
	if corev1alpha1.NodeFailurePolicyOf(&st.pcs.Spec.Template) == corev1alpha1.NodeFailurePolicyRecreateGang {
		if err := c.recreate(ctx, st, i, l, cfg); err != nil {
			return before, nil, err
		}
		grovemetrics.MemberReplacements.WithLabelValues(string(corev1alpha1.NodeFailurePolicyRecreateGang)).Inc()
		return counted, nil, nil
	}
	return counted, &replacement{replica: i, before: before, loss: l}, nil
}

// sameIncident reports whether one of the nodes behind loss had failed before the last
// replacement (at last): nodes that go down together (a rack's power, a switch) but are seen
// failed a little apart belong to the incident that replacement answered, and their pods are
// replaced without a back-off. The back-off is for a replica whose replacements keep failing.
// Transition times have whole seconds: a failure in the replacement's own second counts as new.
func sameIncident(l *replicaLoss, last time.Time) bool {
	for _, h := range l.nodes {
		if h.since.Before(last.Truncate(time.Second)) {
			return true
		}
	}
	return false
}

// backOff is the least time after the n-th replacement before the next one.
func backOff(cfg configv1alpha1.NodeFailureConfiguration, n int32) time.Duration {
	d := cfg.InitialBackOff.Duration
	for range n - 1 {
		if d >= cfg.MaxBackOff.Duration {
			break
		}
		d *= 2
	}
	return min(d, cfg.MaxBackOff.Duration)
}

// replaceWorkers bounds the deletes of lost pods in flight.
const replaceWorkers = 32

// replacement is what replacing one replica's lost pods takes: their deletes, and the
// replica's entry as it was before the replacement counted.
type replacement struct {
	replica int
	before  corev1alpha1.ReplicaNodeFailureStatus
	loss    *replicaLoss
}

// replace deletes the live pods on failed nodes of every replica being replaced, all at once;
// their PodCliques recreate them. A replica some of whose deletes failed gets its entry back
// as before (the next pass tries again, with no back-off).
func (c *nodeFailures) replace(ctx context.Context, st *state, replacing []*replacement,
	entries []corev1alpha1.ReplicaNodeFailureStatus, cfg configv1alpha1.NodeFailureConfiguration) error {
	type podDelete struct {
		rp     *replacement
		pod    *corev1.Pod
		forced bool
	}
	var deletes []podDelete
	for _, rp := range replacing {
		for _, p := range rp.loss.active {
			deletes = append(deletes, podDelete{rp: rp, pod: p, forced: rp.loss.nodes[p.Spec.NodeName].unreachable && ptr.Deref(cfg.ForceDeletePods, true)})
		}
	}
	if len(deletes) == 0 {
		return nil
	}
	st.children.wrote(childPods)
	// done[n]: delete n was made. All at once, not in slow-start batches: a failed node's pods
	// are few and known, a systematic failure is unlikely, and every second counts here (the
	// client's QPS still paces them).
	done := make([]bool, len(deletes))
	errs := make([]error, len(deletes))
	workqueue.ParallelizeUntil(ctx, replaceWorkers, len(deletes), func(n int) {
		d := deletes[n]
		if errs[n] = c.deletePod(ctx, d.pod, d.forced); errs[n] == nil {
			done[n] = true
		}
	})
	err := errors.Join(errs...)
	undone := map[*replacement]bool{}
	for n, d := range deletes {
		if !done[n] {
			undone[d.rp] = true
		}
	}
	for _, rp := range replacing {
		if undone[rp] {
			entries[rp.replica] = rp.before
			continue
		}
		var names []string
		for _, p := range rp.loss.active {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		grovemetrics.MemberReplacements.WithLabelValues(string(corev1alpha1.NodeFailurePolicyReplaceInDomain)).Inc()
		c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, apicommon.ReasonNodeFailed, "ReplaceMembers",
			"replica %d: %s; its pods %s are replaced, the rest of the replica keeps running", rp.replica, describeNodes(rp.loss.nodes), strings.Join(names, ", "))
	}
	return err
}

// recreate recreates the gangs the lost pods belong to (RecreateGang): a scaled PodGang's
// scaling-group replica alone, as gang termination would; the whole replica when a lost pod is
// in its base PodGang. The pods on failed nodes are deleted first, so none stays Terminating
// on a dead kubelet.
func (c *nodeFailures) recreate(ctx context.Context, st *state, i int, l *replicaLoss, cfg configv1alpha1.NodeFailureConfiguration) error {
	st.children.wrote(childPods)
	var errs []error
	for _, p := range l.active {
		errs = append(errs, c.deletePod(ctx, p, l.nodes[p.Spec.NodeName].unreachable && ptr.Deref(cfg.ForceDeletePods, true)))
	}
	gt := &gangTermination{c.r}
	pcsgs, replicas, err := gt.replicas(ctx, st)
	if err != nil {
		return err
	}
	rc := replicas[i]
	if rc == nil {
		rc = &replicaCliques{}
	}
	scaled, whole := scaledGangsLost(l.active, pcsgs, apicommon.BasePodGangName(st.pcs.Name, i))
	if whole {
		msg := fmt.Sprintf("replica %d is recreated: %s and nodeFailurePolicy is RecreateGang", i, describeNodes(l.nodes))
		c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, apicommon.ReasonNodeFailed, "RecreateGang", "%s", msg)
		errs = append(errs, gt.recreateReplicaFor(ctx, st, i, rc, scalingGroupsOfReplica(st.pcs, pcsgs, i), msg))
		return errors.Join(errs...)
	}
	for _, sg := range scaled {
		msg := fmt.Sprintf("replica %d of %s is recreated: %s and nodeFailurePolicy is RecreateGang", sg.index, sg.group.Name, describeNodes(l.nodes))
		c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, apicommon.ReasonNodeFailed, "RecreateGang", "%s", msg)
		errs = append(errs, gt.recreateScalingGroupReplicaFor(ctx, st, sg.group, sg.index, rc.members[sg.group.Name][sg.index], msg))
	}
	return errors.Join(errs...)
}

// scaledGang is one scaling-group replica that has a PodGang of its own.
type scaledGang struct {
	group *corev1alpha1.PodCliqueScalingGroup
	index int
}

// scaledGangsLost maps the lost pods to their gangs: the scaled PodGangs (scaling-group
// replicas at or above the group's minAvailable) they belong to, or whole when one of them is
// in the replica's base PodGang (or cannot be placed in a scaled one).
func scaledGangsLost(lost []*corev1.Pod, pcsgs map[string]*corev1alpha1.PodCliqueScalingGroup, base string) ([]scaledGang, bool) {
	seen := map[scaledGang]bool{}
	var out []scaledGang
	for _, p := range lost {
		g := pcsgs[p.Labels[apicommon.LabelPodCliqueScalingGroup]]
		j, ok := common.IntLabel(p, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		if g == nil || !ok || p.Labels[apicommon.LabelPodGang] == base || j < int(ptr.Deref(g.Spec.MinAvailable, 1)) {
			return nil, true
		}
		sg := scaledGang{group: g, index: j}
		if !seen[sg] {
			seen[sg] = true
			out = append(out, sg)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].group.Name != out[b].group.Name {
			return out[a].group.Name < out[b].group.Name
		}
		return out[a].index < out[b].index
	})
	return out, len(out) == 0
}

// forceDeleteStuck force-deletes the replica's pods that are already terminating on a node
// that is gone or unreachable past the grace: a dead kubelet never confirms their deletion
// (upstream Grove #401), and each holds its name and claims until it goes.
func (c *nodeFailures) forceDeleteStuck(ctx context.Context, st *state, l *replicaLoss, cfg configv1alpha1.NodeFailureConfiguration) error {
	if l == nil || !ptr.Deref(cfg.ForceDeletePods, true) {
		return nil
	}
	var errs []error
	for _, p := range l.terminating {
		h := l.nodes[p.Spec.NodeName]
		if !h.unreachable || ptr.Deref(p.DeletionGracePeriodSeconds, 1) == 0 {
			continue
		}
		st.children.wrote(childPods)
		errs = append(errs, c.deletePod(ctx, p, true))
	}
	return errors.Join(errs...)
}

// deletePod deletes a pod of a failed node, with grace period 0 when forced.
func (c *nodeFailures) deletePod(ctx context.Context, p *corev1.Pod, forced bool) error {
	uid := p.UID
	opts := []client.DeleteOption{client.Preconditions{UID: &uid}}
	reason := grovemetrics.DeleteNodeFailure
	if forced {
		opts, reason = append(opts, client.GracePeriodSeconds(0)), grovemetrics.DeleteNodeFailureForced
	}
	err := c.r.Client.Delete(ctx, p, opts...)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return err
	}
	grovemetrics.PodsDeleted.WithLabelValues(reason).Inc()
	if forced {
		c.r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, apicommon.ReasonPodForceDeleted, "DeletePod",
			"node %s is gone or unreachable: the pod is force-deleted so that its replacement is not blocked", p.Spec.NodeName)
	}
	return nil
}

// judge decides whether the node pod p is bound to has failed.
func (c *nodeFailures) judge(ctx context.Context, p *corev1.Pod, grace time.Duration, now time.Time) (nodeHealth, error) {
	node := &corev1.Node{}
	if err := c.r.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return nodeHealth{}, err
		}
		// The node is gone. Its deletion time is not kept anywhere, so the pod's binding
		// starts the clock: a pod bound an instant before its node appears in the cache is not
		// taken for lost.
		h := nodeHealth{unreachable: true, since: boundAt(p), why: "deleted"}
		h.failed = now.Sub(h.since) >= grace
		return h, nil
	}
	var h nodeHealth
	if ready := readyCondition(node); ready == nil || ready.Status != corev1.ConditionTrue {
		h.since, h.why = node.CreationTimestamp.Time, "not Ready"
		if ready != nil {
			h.since = ready.LastTransitionTime.Time
			h.why = fmt.Sprintf("Ready %s since %s", ready.Status, ready.LastTransitionTime.UTC().Format(time.RFC3339))
		}
		h.unreachable = ready == nil || ready.Status == corev1.ConditionUnknown
	}
	for _, t := range node.Spec.Taints {
		if t.Key != corev1.TaintNodeUnreachable || t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		h.unreachable = true
		if t.TimeAdded != nil && (h.since.IsZero() || t.TimeAdded.Time.Before(h.since)) {
			h.since = t.TimeAdded.Time
			h.why = "unreachable since " + t.TimeAdded.UTC().Format(time.RFC3339)
		} else if h.since.IsZero() {
			h.since, h.why = now, "unreachable"
		}
	}
	h.failed = !h.since.IsZero() && now.Sub(h.since) >= grace
	return h, nil
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func describeNodes(nodes map[string]nodeHealth) string {
	var parts []string
	for name, h := range nodes {
		parts = append(parts, fmt.Sprintf("node %s failed (%s)", name, h.why))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// groveMember reports whether p is a pod Grove created for this PodCliqueSet: its labels, and a
// PodClique of the PodCliqueSet as its controller. A pod already terminating whose PodClique
// is gone (a recreated replica) needs only the labels and a PodClique controller reference.
// Nothing else on a failed node is ever touched.
func groveMember(p *corev1.Pod, pcs *corev1alpha1.PodCliqueSet, cliques map[types.UID]*corev1alpha1.PodClique) bool {
	l := p.Labels
	if l[apicommon.LabelManagedByKey] != apicommon.LabelManagedByValue || l[apicommon.LabelPartOfKey] != pcs.Name {
		return false
	}
	owner := metav1.GetControllerOf(p)
	if owner == nil || owner.Kind != "PodClique" || owner.APIVersion != corev1alpha1.SchemeGroupVersion.String() {
		return false
	}
	if pclq := cliques[owner.UID]; pclq != nil {
		return common.PodCliqueSetName(pclq) == pcs.Name
	}
	return common.IsTerminating(p)
}

// wholeness tells whether a replica has every PodClique it calls for, each with all its pods
// ready (counted in ready, by PodClique UID) on healthy nodes. The scaling groups and cliques
// are read once per pass, when the first replica asks.
type wholeness struct {
	c     *nodeFailures
	st    *state
	ready map[types.UID]int32

	loaded   bool
	err      error
	pcsgs    map[string]*corev1alpha1.PodCliqueScalingGroup
	replicas map[int]*replicaCliques
}

func (w *wholeness) load(ctx context.Context) error {
	if w.loaded {
		return w.err
	}
	w.loaded = true
	groups, err := w.st.children.ownedScalingGroups(ctx, w.st.stored)
	if err != nil {
		w.err = err
		return err
	}
	w.pcsgs = map[string]*corev1alpha1.PodCliqueScalingGroup{}
	pcsgUIDs := map[types.UID]bool{}
	for _, g := range groups {
		w.pcsgs[g.Name], pcsgUIDs[g.UID] = g, true
	}
	w.replicas, w.err = (&gangTermination{w.c.r}).replicaCliques(ctx, w.st, pcsgUIDs)
	return w.err
}

// replica reports whether replica i is whole.
func (w *wholeness) replica(ctx context.Context, i int) bool {
	if w.load(ctx) != nil || w.replicas[i] == nil {
		return false
	}
	rc := w.replicas[i]
	if rc.terminating || !replicaComplete(w.st.pcs, rc, scalingGroupsOfReplica(w.st.pcs, w.pcsgs, i)) {
		return false
	}
	for _, p := range rc.all() {
		if p.Status.ReadyReplicas < p.Spec.Replicas || w.ready[p.UID] < p.Spec.Replicas {
			return false
		}
	}
	return true
}

// memberReplacingCondition is the PodCliqueSet's MemberReplacing condition for its status
// entries; nil when there is nothing to say (no node failure ever, or one long resolved).
func memberReplacingCondition(st *state, entries []corev1alpha1.ReplicaNodeFailureStatus) *metav1.Condition {
	var replacing, waiting, exhausted []string
	for _, e := range entries {
		if len(e.FailedNodes) == 0 {
			continue
		}
		what := fmt.Sprintf("replica %d lost pods on node %s", e.ReplicaIndex, strings.Join(e.FailedNodes, ", "))
		switch {
		case e.BudgetExhausted:
			exhausted = append(exhausted, what)
		case !st.backOff(int(e.ReplicaIndex)).IsZero():
			waiting = append(waiting, fmt.Sprintf("%s (replaced after %s)", what, st.backOff(int(e.ReplicaIndex)).UTC().Format(time.RFC3339)))
		default:
			replacing = append(replacing, what)
		}
	}
	c := &metav1.Condition{Type: apicommon.ConditionMemberReplacing}
	switch {
	case len(exhausted) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonReplacementBudgetExhausted
		c.Message = strings.Join(exhausted, "; ") + ": the replacement budget (nodeFailure.maxReplacements) is used up; gang termination applies after terminationDelay"
	case len(replacing) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonNodeFailed
		c.Message = strings.Join(append(replacing, waiting...), "; ") + ": those pods are being replaced, the rest keep running"
	case len(waiting) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonReplacementBackOff
		c.Message = strings.Join(waiting, "; ") + ": the replica was replaced recently; the next replacement backs off"
	case meta.FindStatusCondition(st.stored.Status.Conditions, apicommon.ConditionMemberReplacing) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, apicommon.ReasonMembersReplaced, "every replica has all its pods ready again"
	default:
		return nil
	}
	return c
}

// syncPodGangConditions applies MemberReplacing to the PodGangs of the replicas with a failed
// node (and clears it on the others) under the node-failure field manager: each PodGang
// condition has one writer.
func (c *nodeFailures) syncPodGangConditions(ctx context.Context, st *state, entries []corev1alpha1.ReplicaNodeFailureStatus) error {
	owned, err := st.children.ownedPodGangs(ctx, st.stored)
	if err != nil {
		return err
	}
	byReplica := map[int]corev1alpha1.ReplicaNodeFailureStatus{}
	for _, e := range entries {
		byReplica[int(e.ReplicaIndex)] = e
	}
	var errs []error
	for _, pg := range owned {
		i, ok := common.IntLabel(pg, apicommon.LabelPodCliqueSetReplicaIndex)
		if !ok || common.IsTerminating(pg) {
			continue
		}
		current := meta.FindStatusCondition(pg.Status.Conditions, apicommon.ConditionMemberReplacing)
		e := byReplica[i]
		var want metav1.Condition
		switch {
		case len(e.FailedNodes) > 0 && e.BudgetExhausted:
			want = metav1.Condition{Type: apicommon.ConditionMemberReplacing, Status: metav1.ConditionFalse, Reason: apicommon.ReasonReplacementBudgetExhausted,
				Message: fmt.Sprintf("members lost on node %s are not replaced: the replica used its replacement budget", strings.Join(e.FailedNodes, ", "))}
		case len(e.FailedNodes) > 0:
			want = metav1.Condition{Type: apicommon.ConditionMemberReplacing, Status: metav1.ConditionTrue, Reason: apicommon.ReasonNodeFailed,
				Message: fmt.Sprintf("members lost on failed node %s are being replaced; the others keep running", strings.Join(e.FailedNodes, ", "))}
		case current != nil && current.Status == metav1.ConditionTrue:
			want = metav1.Condition{Type: apicommon.ConditionMemberReplacing, Status: metav1.ConditionFalse, Reason: apicommon.ReasonMembersReplaced,
				Message: "the replacements are placed and every pod of the replica is ready"}
		default:
			continue
		}
		if current != nil && current.Status == want.Status && current.Reason == want.Reason && current.Message == want.Message {
			continue
		}
		st.children.wrote(childPodGangs)
		err := applyPodGangCondition(ctx, c.r.Client, pg, apicommon.NodeFailureFieldManager, want)
		if apierrors.IsConflict(err) {
			// The cached PodGang is behind (its scheduler wrote meanwhile): the next pass has it.
			st.requeueAfter(time.Second)
			continue
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// podCliqueSetsOnNode maps a node to the PodCliqueSets with pods bound to it.
func (r *Reconciler) podCliqueSetsOnNode(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{IndexPodNodeName: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the pods of a node", "node", obj.GetName())
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var reqs []reconcile.Request
	for i := range list.Items {
		for _, req := range podCliqueSetOf(ctx, &list.Items[i]) {
			if !seen[req] {
				seen[req] = true
				reqs = append(reqs, req)
			}
		}
	}
	return reqs
}

// nodeHealthChanged passes the node events that can make a node failed or healthy: its Ready
// condition's status, the unreachable taint, and its deletion.
var nodeHealthChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return false
		}
		status := func(n *corev1.Node) corev1.ConditionStatus {
			if c := readyCondition(n); c != nil {
				return c.Status
			}
			return ""
		}
		unreachable := func(n *corev1.Node) bool {
			return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable })
		}
		return status(o) != status(n) || unreachable(o) != unreachable(n)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
