// Package gang is grove-scheduler's gang plugin: a PodGang's pods are attempted only once its
// quorum is present, a gang that cannot fit is turned away before any member is assumed, and the
// members wait at a Permit barrier until every PodGroup has minReplicas members with a node —
// then they bind together, or none does.
//
// The decisions live in plugins/internal/ledger (attempts, barrier, back-off) and
// plugins/internal/capacity (whole-gang pre-check); this package wires them to the framework.
package gang

import (
	"cmp"
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	"github.com/ai-dynamo/grove/plugins/internal/memberplan"
	schedmetrics "github.com/ai-dynamo/grove/plugins/internal/metrics"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = pluginargs.GangPluginName

const (
	stateKey fwk.StateKey = "grove.io/" + Name
	// initialBackoff is the back-off after a gang's first failed attempt; it doubles per
	// failure up to GangArgs.MaxBackoff.
	initialBackoff = time.Second
	// eventInterval is the least time between two events about one unplaceable gang.
	eventInterval = 5 * time.Minute
)

// Plugin is the gang plugin.
type Plugin struct {
	ctx    context.Context
	args   pluginargs.GangArgs
	handle fwk.Handle
	gangs  *gangcache.Shared
	ledger *ledger.Ledger
	status *statusWriter
	// missing tells pods whose PodGang or PodGroup does not exist why they wait.
	missing *missingGangReporter
	// runner runs the profile's filters for member plans (plan.go); nil plans nothing.
	runner planRunner
	// plans holds each gang attempt's planned node per member.
	plans memberplan.Store
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.PostBindPlugin    = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New returns the plugin's factory: the plugin is built over the profiles' shared gang state,
// which plugins.Registry creates and hands to every Grove plugin.
func New(profiles *gangcache.Profiles) frameworkruntime.PluginFactory {
	return profiles.Factory(newPlugin)
}

// newPlugin builds the plugin from its (defaulted) args. It does not wait for the PodGang CRD.
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle, profiles *gangcache.Profiles) (fwk.Plugin, error) {
	args, ok := obj.(*pluginargs.GangArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type GangArgs, got %T", obj)
	}
	if err := pluginargs.ValidateGangArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	gangs, err := profiles.For(ctx, h)
	if err != nil {
		return nil, err
	}
	schedmetrics.Register()
	p := &Plugin{
		ctx:    ctx,
		args:   *args,
		handle: h,
		gangs:  gangs,
		ledger: ledger.NewWithStore(clock.RealClock{}, ledger.Policy{
			InitialBackoff: min(initialBackoff, args.MaxBackoff.Duration),
			MaxBackoff:     args.MaxBackoff.Duration,
			EventInterval:  eventInterval,
		}, gangs.Cache),
	}
	p.runner = h
	p.status = newStatusWriter(gangs, p.ledger, h.SharedInformerFactory().Core().V1().Nodes().Lister(), h.EventRecorder())
	p.missing = newMissingGangReporter(ctx, h, p.missingGangReason)
	gangs.SetHandler(p)
	go p.status.run(ctx)
	return p, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// cycleState is what PreFilter decided for a member, read by the later extension points.
type cycleState struct {
	key, group string
	epoch      uint64
	// extra members schedule without waiting at the barrier.
	extra bool
	// planned is the node the gang's plan named for this member; Filter runs only there.
	planned string
	// keepOff are nodes an elastic member keeps off: the domain a waiting quorum ahead of it
	// is pinned to (node → that gang).
	keepOff map[string]string
}

func (s *cycleState) Clone() fwk.StateData { return s }

func readState(state fwk.CycleState) *cycleState {
	if state == nil {
		return nil
	}
	data, err := state.Read(stateKey)
	if err != nil {
		return nil
	}
	s, _ := data.(*cycleState)
	return s
}

// Less orders the queue: priority, then gang age (a gang that just failed an attempt queues as
// if it arrived then, so it does not block others forever), then the order gangs' first members
// arrived, then gang, PodGroup and pod — so the
// pods of one gang are adjacent and gangs do not interleave. It runs under the queue's lock on
// every push and pop: it allocates nothing.
func (p *Plugin) Less(a, b fwk.QueuedEntityInfo) bool {
	if pa, pb := a.GetPriority(), b.GetPriority(); pa != pb {
		return pa > pb
	}
	ka, kb := p.queueKey(a), p.queueKey(b)
	if !ka.time.Equal(kb.time) {
		return ka.time.Before(kb.time)
	}
	if !ka.arrival.Equal(kb.arrival) {
		return ka.arrival.Before(kb.arrival)
	}
	for _, pair := range [4][2]string{{ka.namespace, kb.namespace}, {ka.gang, kb.gang}, {ka.group, kb.group}, {ka.pod, kb.pod}} {
		if pair[0] != pair[1] {
			return pair[0] < pair[1]
		}
	}
	return false
}

// queueKey is where an entity sorts. Pods outside gangs are gangs of their own, named by the pod.
type queueKey struct {
	// time has whole seconds for a gang that never failed (its PodGang's creationTimestamp);
	// arrival, when its first member reached the queue, orders the gangs of one second as they
	// came rather than by name ("gang-10" before "gang-9").
	time, arrival               time.Time
	namespace, gang, group, pod string
}

func (p *Plugin) queueKey(e fwk.QueuedEntityInfo) queueKey {
	switch info := e.(type) {
	case *framework.QueuedPodInfo:
		pod := info.Pod
		gang, isMember := pod.Labels[common.LabelPodGang]
		if !isMember || gang == "" {
			return queueKey{time: e.GetTimestamp(), namespace: pod.Namespace, gang: pod.Name}
		}
		q := p.gangs.QueueTime(pod.Namespace, gang)
		t := q.At
		if t.IsZero() {
			t = e.GetTimestamp()
		}
		return queueKey{time: t, arrival: q.Arrival, namespace: pod.Namespace, gang: gang, group: pod.Labels[common.LabelPodClique], pod: pod.Name}
	case *framework.QueuedPodGroupInfo:
		if info.PodGroup != nil {
			return queueKey{time: e.GetTimestamp(), namespace: info.PodGroup.Namespace, gang: info.PodGroup.Name}
		}
	}
	return queueKey{time: e.GetTimestamp()}
}

func (p *Plugin) setQueueTime(key string, t time.Time) { p.gangs.SetQueueTime(key, t, false) }

// PreEnqueue keeps a member out of the active queue until its PodGang exists (and lists it, for
// grove-operator's pods; a scaled PodGang's also wait for their base PodGang to be placed) and
// every PodGroup has minReplicas members present and ungated, and while the gang backs off.
func (p *Plugin) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	key, group, ok := gangcache.GangKey(pod)
	if !ok {
		return nil
	}
	p.gangs.AddPodIfMissing(pod)
	p.gangs.Arrive(key, time.Now())
	g, found := p.gangs.Get(key)
	if !found {
		p.missing.observe(pod)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for PodGang %s to exist", key))
	}
	if _, ok := g.Quorum.Group(group); !ok {
		p.missing.observe(pod)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"PodGang %s has no PodGroup %q (the pod's %s label)", key, group, common.LabelPodClique))
	}
	// grove-operator creates grove-scheduler's pods without a scheduling gate: until the PodGang
	// lists a pod, and, for a scaled PodGang, until its base PodGang is placed, the plugin holds
	// the pod here instead (GangEvent activates it when either happens).
	if p.gangs.Unlisted(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for PodGang %s to list the pod", key))
	}
	if base := p.gangs.BaseUnplaced(pod); base != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for base PodGang %s to be scheduled", base))
	}
	if missing := g.Quorum.Missing(); missing != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, missing)
	}
	if until, reason, backingOff := p.ledger.BackingOff(key); backingOff {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"the gang backs off until %s after a failed attempt: %s", until.Format(time.RFC3339), reason))
	}
	if !p.gangs.Requeue(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, scoutWaits(key))
	}
	// Its quorum now waits in the queue: elastic pods of other gangs keep its room free.
	p.gangs.MarkQueued(key)
	return nil
}

// PreFilter admits a member into the gang's attempt. The first member of an attempt checks that
// the whole remaining quorum fits the cluster — counting what other gangs hold at their barriers,
// which the scheduler's snapshot already charges to their nodes — before any member is assumed.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfos []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	key, group, ok := gangcache.GangKey(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	g, found := p.gangs.Get(key)
	if !found {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGang %s does not exist", key))
	}
	if missing := g.Quorum.Missing(); missing != "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, missing)
	}
	// Attempted: from here the ledger tells whether its quorum waits (short of room, or
	// mid-attempt).
	p.gangs.Unqueue(key)
	v := p.ledger.Admit(key, pod.UID, group, g.Quorum)
	switch v.Kind {
	case ledger.BackOff, ledger.Defer:
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Message)
	case ledger.Extra:
		why, keepOff := p.elasticWaits(pod, key, nodeInfos)
		if why != "" {
			p.gangs.AddElastic(key)
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
		}
		if keepOff != nil {
			// Retried, as waiting elastic members are, when the quorum it keeps off from is
			// placed: no cluster event tells that its nodes are no longer kept.
			p.gangs.AddElastic(key)
			state.Write(stateKey, &cycleState{key: key, group: group, epoch: v.Epoch, extra: true, keepOff: keepOff})
			return nil, nil
		}
	case ledger.Proceed:
		if v.FirstOfAttempt {
			if !p.gangs.Requeue(pod) {
				// Another member found no room for the gang and retries it for all of them. This
				// one goes back through PreEnqueue, which holds it there: the scheduling queue then
				// skips it for every event the plugin does not register (each pod bound
				// elsewhere, say), where each member left waiting here was checked at each of them.
				p.activate([]*v1.Pod{pod})
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, scoutWaits(key))
			}
			why := p.scaleOutWaits(pod, key, g, nodeInfos)
			if why == "" {
				why = p.quorumAheadFits(pod, key, nodeInfos)
			}
			if why != "" {
				p.gangs.AddElastic(key)
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
			}
			if reason, cause := p.shortOfRoom(pod, key, g.Quorum, nodeInfos); reason != "" {
				reason += p.reserveIfStarving(pod, key, g, nodeInfos)
				p.gangs.SetScout(key, pod.UID)
				p.unplaceable(key, reason, cause)
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
			}
		}
	}
	s := &cycleState{key: key, group: group, epoch: v.Epoch, extra: v.Kind == ledger.Extra}
	state.Write(stateKey, s)
	if v.Kind == ledger.Proceed && !v.FirstOfAttempt {
		// The plan made at the first member of its PodGroup names its node: Filter runs on
		// that one node, and the framework skips Score for a single feasible node.
		if s.planned = p.plannedNode(key, v.Epoch, pod); s.planned != "" {
			return plannedOnly(s.planned), nil
		}
	}
	return nil, nil
}

// scoutWaits says why a member waits while another member of its gang scouts (gangcache.SetScout).
func scoutWaits(key string) string {
	return fmt.Sprintf("PodGang %s found no room at its last attempt; another of its members retries it when room may have come, and brings this one along", key)
}

// wholeGangFits returns why the gang's remaining quorum cannot fit the nodes, or "". Each
// PodGroup counts only the nodes its members may use (a CPU router and tainted GPU workers do
// not share nodes).
// Nodes reserved for another, starving gang are not counted.
func (p *Plugin) wholeGangFits(pod *v1.Pod, key string, q ledger.Quorum, nodeInfos []fwk.NodeInfo) string {
	reason, _ := p.shortOfRoom(pod, key, q, nodeInfos)
	return reason
}

// shortOfRoom is wholeGangFits with the reason as data too: ledger.WaitReservedForOther when
// nodes reserved for another gang were left out, else ledger.WaitNoRoom.
func (p *Plugin) shortOfRoom(pod *v1.Pod, key string, q ledger.Quorum, nodeInfos []fwk.NodeInfo) (reason, cause string) {
	demands, classes := p.gangs.Demands(key, pod, q.Names(), q.Remaining())
	r, prio, now := p.gangs.Reservation(), corev1helpers.PodPriority(pod), time.Now()
	// Nodes are looked at only until the gang fits: in a cluster with room, a handful.
	fitter := capacity.NewFitter(demands)
	reserved := 0
	for _, ni := range nodeInfos {
		if fitter.Done() {
			return "", ""
		}
		node := ni.Node()
		if r.Excludes(key, prio, node.Name, now) {
			reserved++
			continue
		}
		if allowed := classes.Allowed(node); allowed != 0 {
			free := capacity.NodeFree(ni)
			fitter.Offer(&free, allowed)
		}
	}
	if fitter.Done() {
		return "", ""
	}
	reason = fmt.Sprintf("the PodGang needs %s; the nodes it may use fit %d", demands, fitter.Placed())
	if reserved > 0 {
		reason += fmt.Sprintf(" (%d nodes are reserved for PodGang %s, which waits longer)", reserved, r.Key)
		return reason, ledger.WaitReservedForOther
	}
	return reason, ledger.WaitNoRoom
}

// PreFilterExtensions is not needed: the gang check does not depend on single pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a member fits no node. If the gang can no longer reach its quorum in
// this attempt while members hold nodes, every waiting member is rejected at once and the gang
// backs off; a gang that holds nothing just stays pending and says why.
func (p *Plugin) PostFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s := readState(state)
	if s == nil {
		// Another plugin turned the member away before this one admitted it: its quorum is no
		// longer counted as waiting in the queue, and elastic pods that waited for it retry.
		if key, _, ok := gangcache.GangKey(pod); ok && p.gangs.Unqueue(key) {
			p.retryElastic()
		}
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if s.extra {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if s.planned != "" {
		return nil, p.planMissed(pod, s.planned)
	}
	g, found := p.gangs.Get(s.key)
	if !found {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	why, cause, noDomain := p.whyNoNode(state, pod, s.group, statuses)
	if f := p.ledger.NoNode(s.key, s.group, s.epoch, g.Quorum, why); f != nil {
		p.abandon(s.key, f)
	} else if g.Quorum.Assumed() == 0 {
		if noDomain {
			// No domain has room for the gang: as short of room as a gang the pre-check
			// turned away.
			if all, err := p.handle.SnapshotSharedLister().NodeInfos().List(); err == nil {
				why += p.reserveIfStarving(pod, s.key, g, all)
			}
			p.gangs.SetScout(s.key, pod.UID)
		}
		p.unplaceable(s.key, why, cause)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, why)
}

// whyNoNode phrases a member's failure in gang terms, and as data (cause, a ledger.Wait*
// constant). A gang no domain can hold (told in the cycle state, gangcache.NoDomainKey) is
// already a reason about the whole gang and is passed on as it is; noDomain tells it apart.
func (p *Plugin) whyNoNode(state fwk.CycleState, pod *v1.Pod, group string, statuses fwk.NodeToStatusReader) (why, cause string, noDomain bool) {
	if nd := gangcache.NoDomainIn(state); nd != nil {
		return nd.Reason, cmp.Or(nd.Cause, ledger.WaitNoDomain), true
	}
	// The first node's status, or rather the first that is not only "outside the gang's
	// domain": the reason the domain's own nodes gave.
	var st *fwk.Status
	if all, err := p.handle.SnapshotSharedLister().NodeInfos().List(); err == nil {
		for _, ni := range all {
			s := statuses.Get(ni.Node().Name)
			if st == nil {
				st = s
			}
			if s != nil && s.Plugin() != pluginargs.TopologyPluginName {
				st = s
				break
			}
		}
	}
	if st == nil || len(st.Reasons()) == 0 {
		return fmt.Sprintf("pod %s of PodGroup %q fits no node", pod.Name, group), ledger.WaitNoRoom, false
	}
	return fmt.Sprintf("pod %s of PodGroup %q fits no node (first node: %s)", pod.Name, group, st.Message()), filterCause(st.Plugin()), false
}

// filterCause is the wait cause of a member rejected by filter plugin.
func filterCause(plugin string) string {
	switch plugin {
	case "", "NodeResourcesFit":
		return ledger.WaitNoRoom
	case Name:
		return ledger.WaitReservedForOther
	case pluginargs.DRAPluginName, "DynamicResources":
		return ledger.WaitDRA
	case pluginargs.TopologyPluginName:
		return ledger.WaitNoDomain
	}
	return ledger.WaitFilterRejected
}

// Reserve counts the member as holding its node. The first member of an attempt pulls the
// gang's other pending members into the active queue so the gang is attempted together. The
// first of a PodGroup's members to get a node in an attempt plans the nodes of the others
// (plan.go).
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s := readState(state)
	if s == nil {
		return nil
	}
	p.gangs.Assume(pod, nodeName)
	if s.extra {
		return nil
	}
	first, err := p.ledger.Reserve(s.key, s.epoch)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if s.planned == "" {
		p.planGroup(ctx, state, pod, s.key, s.group, s.epoch, nodeName)
	}
	if first {
		activateLater(state, p.gangs.Pending(s.key))
	}
	return nil
}

// Unreserve: a member lost its node (Permit timeout, rejection, failed binding). Before the
// barrier was released that abandons the gang's attempt.
func (p *Plugin) Unreserve(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ string) {
	s := readState(state)
	if s == nil {
		return
	}
	// How far the gang got is read before the member lets go of its node.
	g, found := p.gangs.Get(s.key)
	p.gangs.Forget(pod)
	if s.extra || !found {
		return
	}
	if f := p.ledger.Lost(s.key, pod.UID, s.epoch, g.Quorum, p.permitTimeout(g)); f != nil {
		p.abandon(s.key, f)
	}
}

// Permit is the gang barrier.
func (p *Plugin) Permit(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	s := readState(state)
	if s == nil {
		return nil, 0
	}
	g, found := p.gangs.Get(s.key)
	if !found {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGang %s was deleted", s.key)), 0
	}
	v := p.ledger.Permit(s.key, pod.UID, s.epoch, g.Quorum)
	switch v.Kind {
	case ledger.Allow:
		p.plans.Forget(s.key)
		p.release(s.key)
		p.gangs.ClearScout(s.key)
		for _, uid := range v.Release {
			if wp := p.handle.GetWaitingPod(uid); wp != nil {
				wp.Allow(Name)
			}
		}
		p.activate(p.gangs.Members(s.key, v.Activate))
		// A quorum got its nodes: elastic members that waited for it may fit what is left.
		p.retryElastic()
		return nil, 0
	case ledger.Wait:
		schedmetrics.PermitWait()
		return fwk.NewStatus(fwk.Wait, "waiting for the rest of the gang: "+g.Quorum.Progress()), p.permitTimeout(g)
	default:
		return fwk.NewStatus(fwk.Unschedulable, v.Message), 0
	}
}

// PostBind records the binding before the informer shows it, so the gang's counts stay exact.
func (p *Plugin) PostBind(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	if readState(state) != nil {
		p.gangs.Bind(pod, nodeName)
	}
}

// permitTimeout is GangArgs.PermitWaitTimeout unless the PodGang's annotation overrides it.
func (p *Plugin) permitTimeout(g gangcache.Gang) time.Duration {
	if v, ok := g.PodGang.Annotations[common.AnnotationPermitWaitTimeout]; ok {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return min(d, pluginargs.MaxPermitWaitTimeoutSeconds*time.Second)
		}
	}
	return p.args.PermitWaitTimeout.Duration
}

// abandon rejects every waiting member of a failed attempt at once, backs the gang off and
// brings it back when the back-off ends.
func (p *Plugin) abandon(key string, f *ledger.Failure) {
	schedmetrics.AttemptAbandoned(f.Cause)
	p.plans.Forget(key)
	for _, uid := range f.Reject {
		if wp := p.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, f.Reason)
		}
	}
	now := time.Now()
	p.setQueueTime(key, now)
	time.AfterFunc(f.Backoff, func() {
		if p.ctx.Err() == nil {
			p.activate(p.gangs.Pending(key))
		}
	})
	cause := ledger.WaitBinding
	if f.Cause == ledger.CauseNoNode {
		cause = ledger.WaitNoRoom
	}
	p.unplaceable(key, f.Reason, cause)
}

// unplaceable records why the gang is not placed (cause: the same as data, a ledger.Wait*
// constant): on its status always, as an event once. Gangs that let it go first are retried:
// it did not take the room.
func (p *Plugin) unplaceable(key, reason, cause string) {
	defer p.retryElastic()
	if cause == ledger.WaitFilterRejected {
		p.gangs.SetRefused(key)
	}
	if p.ledger.Unplaceable(key, reason, cause) {
		p.status.event(key, reason)
	}
	p.status.enqueue(key)
}

func (p *Plugin) activate(pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	m := make(map[string]*v1.Pod, len(pods))
	for _, pod := range pods {
		m[pod.Namespace+"/"+pod.Name] = pod
	}
	p.handle.Activate(klog.FromContext(p.ctx), m)
}

// activateLater hands pods to the framework to activate at the end of this scheduling cycle.
func activateLater(state fwk.CycleState, pods []*v1.Pod) {
	data, err := state.Read(framework.PodsToActivateKey)
	if err != nil {
		return
	}
	toActivate, ok := data.(*framework.PodsToActivate)
	if !ok {
		return
	}
	toActivate.Lock()
	defer toActivate.Unlock()
	for _, pod := range pods {
		toActivate.Map[pod.Namespace+"/"+pod.Name] = pod
	}
}

// GangEvent reacts to PodGang and member changes that no scheduler event reports: a quorum
// that became present, a member ungated or listed after it, and a new or changed PodGang
// activate the gang's pending members; a placed base PodGang activates its scaled PodGangs'
// members; a deleted PodGang rejects its waiting members.
func (p *Plugin) GangEvent(key string, ev gangcache.Event) {
	switch ev {
	case gangcache.GangChanged:
		if g, ok := p.gangs.Get(key); ok {
			p.gangs.SetQueueTime(key, g.PodGang.CreationTimestamp.Time, true)
			if g.Quorum.Missing() == "" {
				p.activate(p.gangs.Pending(key))
			}
		}
		p.status.enqueue(key)
	case gangcache.QuorumPresent, gangcache.MemberPresent, gangcache.ScoutLeft:
		p.activate(p.gangs.Pending(key))
	case gangcache.GangDeleted:
		// The cache already dropped the gang's state (its one cleanup); the members waiting at
		// the barrier are the framework's to reject.
		p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
			if k, _, ok := gangcache.GangKey(wp.GetPod()); ok && k == key {
				wp.Reject(Name, fmt.Sprintf("PodGang %s was deleted", key))
			}
		})
		p.release(key)
		p.plans.Forget(key)
		p.status.enqueue(key)
		p.retryElastic()
	case gangcache.MembersChanged:
		p.status.enqueue(key)
		p.releaseIfNotWaiting(key)
		// A waiting gang that lost members may no longer hold elastic members back.
		if g, ok := p.gangs.Get(key); ok && !g.Quorum.Held() {
			p.retryElastic()
		}
	case gangcache.FirstMember:
		p.status.enqueue(key)
	case gangcache.BasePlaced:
		p.activate(p.gangs.ScaledPending(key))
	}
}

// SignPod lets the scheduler batch pods: non-members are all alike to this plugin; members are
// alike within one PodGroup of one gang.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return gangcache.SignFragments(pod), nil
}
