// Package gangcache holds grove-scheduler's one record per gang, shared by the Gang, Topology,
// DRA and GangPreemption plugins of a profile. It is fed by informers (PodGangs, pods) and by
// the plugins themselves (which member got a node), and keeps per-PodGroup counts current so
// that the quorum questions asked on every scheduling cycle cost O(PodGroups), not O(members).
//
// # One record, one lock, one cleanup
//
// Everything the scheduler knows about a gang lives in its record (entry): the PodGang and its
// members, quorum progress, the scout, the gang plugin's attempt state (ledger.Gang), its queue
// time and whether its quorum waits in the queue, the topology plugin's plan for the current
// attempt and its missed preference, the status writer's last write, and when the DRA plugin
// last sent each of its events about the gang. Records live in one map of one Cache.
//
// Locks: Cache.mu guards the map of records, the by-namespace index of it, every field of every
// record and the set of gangs whose elastic members wait. Code run under it is the cache's own
// (and ledger's pure decisions through UpdateAttempt): it never calls a plugin, the framework or
// the API server. The profile's one Reservation is an atomic pointer, read without a lock on
// every Filter call. The Handler and DeviceAdvisor are set once while the profile's plugins are
// built and read under Cache.mu, but called outside it: the Handler after the cache is updated,
// the DeviceAdvisor by the topology plugin's PreFilter.
//
// Cleanup: a deleted PodGang's gang-level state (attempt, plan, queue time, status write, events) is
// dropped at once by DeletePodGang (its members may still be running and keep their counts);
// the record itself goes when the PodGang and its members are all gone. No plugin keeps a map of
// gangs of its own that would need cleaning.
package gangcache

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/capacity"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/order"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// GangKey names a pod's PodGang as "<namespace>/<name>" and returns its PodGroup; ok is false
// for pods that belong to no gang.
func GangKey(pod *v1.Pod) (key, group string, ok bool) {
	name, ok := pod.Labels[common.LabelPodGang]
	if !ok || name == "" {
		return "", "", false
	}
	return pod.Namespace + "/" + name, pod.Labels[common.LabelPodClique], true
}

// signerName keys gang membership in pod signatures.
const signerName = "grove.io/PodGang.PodGroup"

// SignFragments are what gang membership adds to a pod's scheduling signature: members of one
// PodGroup of one gang are interchangeable, members of different gangs are not, and pods outside
// gangs add nothing (so the scheduler's batching of them is unaffected).
func SignFragments(pod *v1.Pod) []fwk.SignFragment {
	key, group, ok := GangKey(pod)
	if !ok {
		return nil
	}
	value := key + "/" + group
	if slice, ok := pod.Labels[common.LabelSliceIndex]; ok {
		// Members of different slices go to different domains: no batch or member plan may
		// carry one slice's domain over to another.
		value += "/slice=" + slice
	}
	return []fwk.SignFragment{{Key: signerName, Value: value}}
}

// KeyOf is the key of a PodGang.
func KeyOf(pg *v1alpha1.PodGang) string { return pg.Namespace + "/" + pg.Name }

// Event tells the Handler what changed about a gang.
type Event int

const (
	// GangChanged: the PodGang was created or its spec changed (status updates are not told).
	GangChanged Event = iota
	// GangDeleted: the PodGang is gone.
	GangDeleted
	// QuorumPresent: every PodGroup now has minReplicas members present and ungated.
	QuorumPresent
	// MembersChanged: a member was bound, deleted or started running.
	MembersChanged
	// MemberPresent: a known member became present (ungated) while the quorum already was. The
	// scheduling queue may hold it from an earlier PreEnqueue (the quorum was missing then, or
	// the pod was still gated) and no scheduler event brings it back.
	MemberPresent
	// FirstMember: the cache saw the first member pod of a known PodGang, and its quorum is
	// not present yet.
	FirstMember
	// BasePlaced: every PodGroup of a base PodGang (one no other PodGang names as its base) now
	// has minReplicas members bound. The scaled PodGangs that name it may start.
	BasePlaced
	// ScoutLeft: the member that scouted for the gang (SetScout) is gone. The members it held
	// back (the gang plugin's PreEnqueue) may try again; no scheduler event tells them.
	ScoutLeft
)

// Handler is told about changes after the cache is updated, outside its lock. The gang plugin
// of the profile is the cache's Handler.
type Handler interface {
	GangEvent(key string, ev Event)
}

// HandlerFunc is a Handler made of a function.
type HandlerFunc func(key string, ev Event)

// GangEvent implements Handler.
func (f HandlerFunc) GangEvent(key string, ev Event) { f(key, ev) }

type memberState int

const (
	pending memberState = iota
	assumed
	bound
)

type member struct {
	pod     *v1.Pod
	group   string
	present bool
	state   memberState
	node    string
	running bool
	// leaving: the pod is terminating. It still occupies its node (the framework charges it
	// there until it is gone) but holds no place in its gang: a rolling update deletes a gang's
	// pods and lists their replacements in the same PodGang, and counted as bound the old pods
	// would make the new quorum look placed until they are gone.
	leaving bool
}

type groupCounts struct {
	present, assumed, bound, running int32
	// template is what the group's members ask of a node (they share a pod template).
	template    Template
	hasTemplate bool
}

// Template is what every member of a PodGroup asks of a node.
type Template struct {
	// Shape is one member's resource request.
	Shape capacity.Resources
	// Rules are its hard node rules.
	Rules nodes.Rules
	// Priority is its priority.
	Priority int32
}

// creationTime is when pod was created; now for a pod without a creation timestamp (never one
// the apiserver served).
func creationTime(pod *v1.Pod) time.Time {
	if pod.CreationTimestamp.IsZero() {
		return time.Now()
	}
	return pod.CreationTimestamp.Time
}

// TemplateOf is pod's Template.
func TemplateOf(pod *v1.Pod) Template {
	return Template{Shape: capacity.PodShape(pod), Rules: nodes.RulesOf(pod), Priority: podPriority(pod)}
}

// entry is a gang's one record. Cache.mu guards every field.
type entry struct {
	namespace, name string
	podGang         *v1alpha1.PodGang
	// listed holds "<group>/<pod>" for every pod reference of the PodGang.
	listed        map[string]struct{}
	members       map[types.UID]*member
	groups        map[string]*groupCounts
	quorumPresent bool
	// quorumHeld: every PodGroup has minReplicas members assumed or bound. Kept with the counts
	// so that WaitingQuorums, which every attempt of every gang asks, passes over the gangs
	// already placed without reading their groups (1.5 s of CPU with 1875 gangs of 8 on 5000
	// nodes).
	quorumHeld bool
	// scout is the member that found the gang unplaceable; "" when none did since it was
	// last placed.
	scout types.UID
	// claimants counts members that name ResourceClaims.
	claimants int32
	// membersSince is the creation time of the earliest member pod seen since the gang last had
	// none; zero while it has none.
	membersSince time.Time
	// topPriority is the highest priority of a member seen since the gang last had none (it
	// may stay above the members left): a bound that lets WaitingQuorums pass over gangs
	// without reading their members.
	topPriority int32
	// held lists the nodes members hold (assumed or bound, not leaving), per PodGroup, with how
	// many members hold each; heldAt is each (PodGroup, node)'s position in held. Kept with the
	// counts so that a replica spread reads what every other replica holds without walking
	// their members (Spreads, once per gang plan, over every gang of the namespace).
	held   []heldNode
	heldAt map[heldNode]int

	gangState
}

// heldNode is a node some members of one PodGroup hold; n counts them (0 in heldAt's keys).
type heldNode struct {
	group, node string
	n           int32
}

// gangState is what a record knows about the PodGang's scheduling beyond its members; it is
// dropped when the PodGang is deleted.
type gangState struct {
	// attempt is the gang plugin's ledger record: epoch, barrier, back-off, reason.
	attempt ledger.Gang
	// queue is where the gang sorts in the scheduling queue.
	queue QueueTime
	// queued: the gang's quorum passed PreEnqueue and was not attempted since.
	queued bool
	// plan is the topology plugin's placement of the current attempt; preferenceMissed the
	// PodGang UID whose member fit no node of its preferred domain.
	plan             Plan
	preferenceMissed types.UID
	// written is the status writer's last write of the PodGang's status.
	written Written
	// told is when each event about the gang (by what it says) was last sent.
	told map[string]time.Time
	// ruledOut lists the domains a filter rejected since the room last changed; refusedAt is
	// the room version when a filter last refused the gang (refused: one did).
	ruledOut  ruledOut
	refusedAt uint64
	refused   bool
}

// QueueTime is where a gang sorts in the scheduling queue: At (the PodGang's creation, or its
// last failed attempt; zero until the PodGang is seen), then Arrival (when its first member
// reached the queue; zero until then).
type QueueTime struct {
	At, Arrival time.Time
}

// Plan is the topology plugin's placement of a gang attempt, kept for the attempt's later
// members. Tree is kept for the PodGang it was built from; Plan is nil for gangs without pack
// constraints.
type Plan struct {
	PodGang *v1alpha1.PodGang
	Tree    *placement.Tree
	Plan    *placement.Plan
}

// Written is the status writer's last write of a PodGang's status (Status is the writer's own
// value), so that a write the informer has not shown yet is not repeated.
type Written struct {
	Status any
	At     time.Time
}

// Cache holds the gangs' records. Its methods are safe for concurrent use.
type Cache struct {
	mu    sync.RWMutex
	gangs map[string]*entry
	// byName indexes gangs by namespace and name: queue ordering looks gangs up without
	// building a key.
	byName map[string]map[string]*entry
	// elastic holds the gangs whose members wait for other gangs' quorums.
	elastic map[string]struct{}
	// waiting indexes the gangs whose quorum is present but not placed (track keeps it), the
	// only ones WaitingQuorums can return: with thousands of gangs placed, walking every record
	// at every attempt was still a third of a second of CPU per 15000 attempts.
	waiting map[string]*entry
	// spreaders indexes the replica spread entries of the PodGangs by namespace, spread group
	// and key: a gang's spread reads its peers' held nodes without passing over every gang of
	// the namespace and every entry of theirs (Spreads, once per gang plan).
	spreaders map[spreadGroup][]spreadRef
	handler   Handler
	advisor   DeviceAdvisor
	reservations
	// room counts the changes that may add room (RoomChanged).
	room atomic.Uint64
}

// New returns an empty cache; Profiles.For wires one to informers.
func New() *Cache {
	return &Cache{gangs: map[string]*entry{}, byName: map[string]map[string]*entry{}, elastic: map[string]struct{}{},
		waiting: map[string]*entry{}, spreaders: map[spreadGroup][]spreadRef{}}
}

// SetHandler makes h the one Handler told about changes (the profile's gang plugin).
func (c *Cache) SetHandler(h Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handler = h
}

func (c *Cache) notify(key string, events ...Event) {
	c.mu.RLock()
	h := c.handler
	c.mu.RUnlock()
	if h == nil {
		return
	}
	for _, ev := range events {
		h.GangEvent(key, ev)
	}
}

func (c *Cache) entry(key string) *entry {
	e := c.gangs[key]
	if e == nil {
		ns, name, _ := strings.Cut(key, "/")
		e = &entry{namespace: ns, name: name, members: map[types.UID]*member{}, groups: map[string]*groupCounts{}}
		c.gangs[key] = e
		if c.byName[ns] == nil {
			c.byName[ns] = map[string]*entry{}
		}
		c.byName[ns][name] = e
	}
	return e
}

// removeIfEmpty drops the record of a gang whose PodGang and members are all gone.
func (c *Cache) removeIfEmpty(key string, e *entry) {
	if !e.empty() {
		return
	}
	delete(c.gangs, key)
	delete(c.elastic, key)
	delete(c.waiting, key)
	if byNs := c.byName[e.namespace]; byNs != nil {
		delete(byNs, e.name)
		if len(byNs) == 0 {
			delete(c.byName, e.namespace)
		}
	}
}

func (e *entry) counts(group string) *groupCounts {
	g := e.groups[group]
	if g == nil {
		g = &groupCounts{}
		e.groups[group] = g
	}
	return g
}

func (e *entry) add(m *member, sign int32) {
	if len(m.pod.Spec.ResourceClaims) > 0 {
		e.claimants += sign
	}
	g := e.counts(m.group)
	if m.present {
		g.present += sign
	}
	switch {
	case m.leaving:
	case m.state == assumed:
		g.assumed += sign
	case m.state == bound:
		g.bound += sign
	}
	if m.running && !m.leaving {
		g.running += sign
	}
	if m.holdsNode() {
		e.hold(m.group, m.node, sign)
	}
	if sign > 0 && !g.hasTemplate {
		g.template, g.hasTemplate = TemplateOf(m.pod), true
	}
}

// hold counts one more (sign +1) or one fewer member of group on node in e.held.
func (e *entry) hold(group, node string, sign int32) {
	k := heldNode{group: group, node: node}
	if i, ok := e.heldAt[k]; ok {
		if e.held[i].n += sign; e.held[i].n <= 0 {
			last := len(e.held) - 1
			e.held[i] = e.held[last]
			e.heldAt[heldNode{group: e.held[i].group, node: e.held[i].node}] = i
			e.held = e.held[:last]
			delete(e.heldAt, k)
		}
		return
	}
	if sign <= 0 {
		return
	}
	if e.heldAt == nil {
		e.heldAt = map[heldNode]int{}
	}
	e.heldAt[k] = len(e.held)
	e.held = append(e.held, heldNode{group: group, node: node, n: sign})
}

// setMember replaces the member's record, keeping the counts and membersSince right.
func (e *entry) setMember(uid types.UID, m *member) {
	if old := e.members[uid]; old != nil {
		e.add(old, -1)
	}
	defer e.updateQuorumHeld()
	if m == nil {
		delete(e.members, uid)
		if len(e.members) == 0 {
			// The gang's pods are all gone: when new ones come, their wait starts afresh.
			e.membersSince = time.Time{}
		}
		return
	}
	if prio := podPriority(m.pod); len(e.members) == 0 || prio > e.topPriority {
		e.topPriority = prio
	}
	e.members[uid] = m
	e.add(m, +1)
	if created := creationTime(m.pod); e.membersSince.IsZero() || created.Before(e.membersSince) {
		e.membersSince = created
	}
}

// updateQuorumPresent reports whether the gang's quorum just became present.
func (e *entry) updateQuorumPresent() bool {
	was := e.quorumPresent
	e.quorumPresent = e.podGang != nil
	if e.podGang != nil {
		for _, pg := range e.podGang.Spec.PodGroups {
			if g := e.groups[pg.Name]; (g == nil && pg.MinReplicas > 0) || (g != nil && g.present < pg.MinReplicas) {
				e.quorumPresent = false
				break
			}
		}
	}
	return e.quorumPresent && !was
}

func (e *entry) empty() bool { return e.podGang == nil && len(e.members) == 0 }

// track keeps c.waiting in step with the entry's quorum flags; c.mu is held for writing.
func (c *Cache) track(key string, e *entry) {
	if e.podGang != nil && e.quorumPresent && !e.quorumHeld {
		c.waiting[key] = e
	} else {
		delete(c.waiting, key)
	}
}

func isPresent(pod *v1.Pod) bool {
	return pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0
}

// NeedsListing reports whether pod joins its gang only once its PodGang lists it: a pod a
// PodClique controls is grove-operator's, which creates it without a scheduling gate for
// grove-scheduler and lists it in its PodGang's PodGroup afterwards. Until then the gang plugin
// holds it back, as the gate would have. Pods made by hand (and PodGangs that list none of
// their pods) join by their labels alone.
func NeedsListing(pod *v1.Pod) bool {
	for i := range pod.OwnerReferences {
		ref := &pod.OwnerReferences[i]
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind == "PodClique" && strings.HasPrefix(ref.APIVersion, corev1alpha1.GroupName+"/")
		}
	}
	return false
}

func listedKey(group, name string) string { return group + "/" + name }

// lists reports whether the PodGang lists the pod in group; c.mu is held.
func (e *entry) lists(group, name string) bool {
	_, ok := e.listed[listedKey(group, name)]
	return ok
}

// isPresentIn reports whether pod counts towards group's quorum: ungated, not deleted, and
// listed by the PodGang when it must be (NeedsListing); c.mu is held.
func (e *entry) isPresentIn(pod *v1.Pod, group string) bool {
	return isPresent(pod) && (!NeedsListing(pod) || e.lists(group, pod.Name))
}

// placedBase reports whether e is a base PodGang whose every PodGroup has minReplicas members
// bound; c.mu is held.
func (e *entry) placedBase() bool {
	if e.podGang == nil || tierOf(e.podGang) != order.Base {
		return false
	}
	for _, pg := range e.podGang.Spec.PodGroups {
		if g := e.groups[pg.Name]; (g == nil && pg.MinReplicas > 0) || (g != nil && g.bound < pg.MinReplicas) {
			return false
		}
	}
	return true
}

// UpsertPod records a member pod as the informer sees it. A node the scheduler assumed for the
// pod is kept until the pod shows as bound.
func (c *Cache) UpsertPod(pod *v1.Pod) {
	if key, events := c.upsertPod(pod); len(events) > 0 {
		c.notify(key, events...)
	}
}

func (c *Cache) upsertPod(pod *v1.Pod) (string, []Event) {
	key, group, ok := GangKey(pod)
	if !ok {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(key)
	m := &member{pod: pod, group: group, present: e.isPresentIn(pod, group), running: pod.Status.Phase == v1.PodRunning,
		leaving: pod.DeletionTimestamp != nil}
	old := e.members[pod.UID]
	switch {
	case pod.Spec.NodeName != "":
		m.state, m.node = bound, pod.Spec.NodeName
	case old != nil && old.state != pending:
		m.state, m.node = old.state, old.node
	}
	changed := old == nil || old.state != m.state || old.running != m.running || old.present != m.present || old.leaving != m.leaving
	first := len(e.members) == 0
	wasPlaced := e.placedBase()
	e.setMember(pod.UID, m)
	var events []Event
	if !wasPlaced && e.placedBase() {
		events = append(events, BasePlaced)
	}
	becamePresent := e.updateQuorumPresent()
	c.track(key, e)
	if becamePresent {
		events = append(events, QuorumPresent)
	} else if e.quorumPresent && old != nil && !old.present && m.present {
		events = append(events, MemberPresent)
	}
	if changed && old != nil {
		events = append(events, MembersChanged)
	}
	if first && e.podGang != nil && !e.quorumPresent {
		events = append(events, FirstMember)
	}
	return key, events
}

// AddPodIfMissing records a pod the cache has not seen yet: the scheduling queue may hand a pod
// to PreEnqueue before the cache's own informer handler ran. PreEnqueue runs under the queue's
// lock, so the Handler (which may activate pods in that queue) is told from another goroutine.
func (c *Cache) AddPodIfMissing(pod *v1.Pod) {
	key, _, ok := GangKey(pod)
	if !ok {
		return
	}
	c.mu.RLock()
	e := c.gangs[key]
	known := e != nil && e.members[pod.UID] != nil
	c.mu.RUnlock()
	if known {
		return
	}
	if key, events := c.upsertPod(pod); len(events) > 0 {
		go c.notify(key, events...)
	}
}

// DeletePod forgets a member pod.
func (c *Cache) DeletePod(pod *v1.Pod) {
	key, _, ok := GangKey(pod)
	if !ok {
		return
	}
	c.mu.Lock()
	e := c.gangs[key]
	if e == nil || e.members[pod.UID] == nil {
		c.mu.Unlock()
		return
	}
	e.setMember(pod.UID, nil)
	e.updateQuorumPresent()
	events := []Event{MembersChanged}
	if e.scout == pod.UID {
		e.scout = ""
		events = append(events, ScoutLeft)
	}
	c.track(key, e)
	c.removeIfEmpty(key, e)
	c.mu.Unlock()
	c.notify(key, events...)
}

// UpsertPodGang records a PodGang.
func (c *Cache) UpsertPodGang(pg *v1alpha1.PodGang) {
	key := KeyOf(pg)
	c.mu.Lock()
	e := c.entry(key)
	specChanged := e.podGang == nil || e.podGang.Generation != pg.Generation
	wasPlaced := e.placedBase()
	c.indexSpreads(e, e.podGang, pg)
	e.podGang = pg
	e.setListed(pg)
	e.updateQuorumHeld()
	becamePresent := e.updateQuorumPresent()
	c.track(key, e)
	placed := !wasPlaced && e.placedBase()
	c.mu.Unlock()
	var events []Event
	if specChanged {
		events = append(events, GangChanged)
	}
	if becamePresent {
		events = append(events, QuorumPresent)
	}
	if placed {
		events = append(events, BasePlaced)
	}
	c.notify(key, events...)
}

// setListed records the PodGang's pod references and recounts the members whose presence
// depends on them; c.mu is held.
func (e *entry) setListed(pg *v1alpha1.PodGang) {
	n := 0
	for _, g := range pg.Spec.PodGroups {
		n += len(g.PodReferences)
	}
	listed := make(map[string]struct{}, n)
	for _, g := range pg.Spec.PodGroups {
		for _, ref := range g.PodReferences {
			listed[listedKey(g.Name, ref.Name)] = struct{}{}
		}
	}
	e.listed = listed
	for uid, m := range e.members {
		if present := e.isPresentIn(m.pod, m.group); present != m.present {
			cp := *m
			cp.present = present
			e.setMember(uid, &cp)
		}
	}
}

// DeletePodGang forgets a PodGang and everything the plugins knew of its scheduling, at once:
// this is the one cleanup of a gang's state. Its members stay known until they are deleted.
func (c *Cache) DeletePodGang(namespace, name string) {
	key := namespace + "/" + name
	c.mu.Lock()
	if e := c.gangs[key]; e != nil {
		c.indexSpreads(e, e.podGang, nil)
		e.podGang = nil
		e.listed = nil
		for uid, m := range e.members {
			if m.present && NeedsListing(m.pod) {
				cp := *m
				cp.present = false
				e.setMember(uid, &cp)
			}
		}
		e.quorumPresent, e.quorumHeld = false, false
		c.track(key, e)
		e.scout = ""
		e.gangState = gangState{}
		delete(c.elastic, key)
		c.removeIfEmpty(key, e)
	}
	c.mu.Unlock()
	c.notify(key, GangDeleted)
}

// setPlacement moves a member to state on node; the member is recorded from pod when unknown.
func (c *Cache) setPlacement(pod *v1.Pod, state memberState, node string) {
	key, group, ok := GangKey(pod)
	if !ok {
		return
	}
	c.mu.Lock()
	e := c.entry(key)
	old := e.members[pod.UID]
	m := &member{pod: pod, group: group, present: e.isPresentIn(pod, group), state: state, node: node, leaving: pod.DeletionTimestamp != nil}
	if old != nil {
		cp := *old
		m = &cp
		if old.state == bound && state != bound {
			// The informer already saw the binding: that is final.
			c.mu.Unlock()
			return
		}
		m.state, m.node = state, node
	}
	wasPlaced := e.placedBase()
	e.setMember(pod.UID, m)
	e.updateQuorumPresent()
	c.track(key, e)
	placed := !wasPlaced && e.placedBase()
	c.mu.Unlock()
	if state == bound {
		c.notify(key, MembersChanged)
	}
	if placed {
		c.notify(key, BasePlaced)
	}
}

// Assume records that the scheduler reserved node for the member.
func (c *Cache) Assume(pod *v1.Pod, node string) { c.setPlacement(pod, assumed, node) }

// Forget records that the member lost its reserved node.
func (c *Cache) Forget(pod *v1.Pod) { c.setPlacement(pod, pending, "") }

// Bind records that the member was bound to node (before the informer shows it).
func (c *Cache) Bind(pod *v1.Pod, node string) { c.setPlacement(pod, bound, node) }

// Gang is a consistent read of one gang.
type Gang struct {
	PodGang *v1alpha1.PodGang
	// MembersSince is the creation time of the earliest member pod seen since the gang last had
	// none; zero while it has none.
	MembersSince time.Time
	// Quorum has the PodGang's PodGroups in spec order.
	Quorum ledger.Quorum
	// Running counts running members per PodGroup.
	Running map[string]int32
}

// Get returns the gang of key; ok is false while its PodGang is unknown.
func (c *Cache) Get(key string) (Gang, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil {
		return Gang{}, false
	}
	g := Gang{PodGang: e.podGang, MembersSince: e.membersSince, Quorum: make(ledger.Quorum, 0, len(e.podGang.Spec.PodGroups)), Running: map[string]int32{}}
	for _, pg := range e.podGang.Spec.PodGroups {
		gs := ledger.GroupState{Name: pg.Name, Min: pg.MinReplicas}
		if counts := e.groups[pg.Name]; counts != nil {
			gs.Present, gs.Assumed, gs.Bound = counts.present, counts.assumed, counts.bound
			g.Running[pg.Name] = counts.running
		}
		g.Quorum = append(g.Quorum, gs)
	}
	return g, true
}

// Template is what a member of the PodGroup asks of a node.
func (c *Cache) Template(key, group string) (Template, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.gangs[key]; e != nil {
		if g := e.groups[group]; g != nil && g.hasTemplate {
			return g.template, true
		}
	}
	return Template{}, false
}

// NodeRules are the hard node rules of the gang's PodGroups, one entry per group whose members
// were seen, and pod's own first: pod stands for groups none of whose members was seen yet.
// Queueing hints ask whether a node change opened a node to any of them.
func (c *Cache) NodeRules(key string, pod *v1.Pod) []nodes.Rules {
	out := []nodes.Rules{nodes.RulesOf(pod)}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.gangs[key]; e != nil {
		for _, g := range e.groups {
			if g.hasTemplate {
				out = append(out, g.template.Rules)
			}
		}
	}
	return out
}

// Member scans: which members a question is about.
func (m *member) pendingPresent() bool { return m.state == pending && m.present }
func (m *member) isAssumed() bool      { return m.state == assumed }
func (m *member) isBound() bool        { return m.state == bound && !m.leaving }
func (m *member) holdsNode() bool      { return m.state != pending && m.node != "" && !m.leaving }

// pods appends the pods of the members keep selects to out.
func (e *entry) pods(out []*v1.Pod, keep func(*member) bool) []*v1.Pod {
	for _, m := range e.members {
		if keep(m) {
			out = append(out, m.pod)
		}
	}
	return out
}

// nodes lists the nodes of the members keep selects, per PodGroup.
func (e *entry) nodes(keep func(*member) bool) map[string][]string {
	out := map[string][]string{}
	for _, m := range e.members {
		if keep(m) {
			out[m.group] = append(out[m.group], m.node)
		}
	}
	return out
}

// podsOf returns the pods of gang key's members keep selects.
func (c *Cache) podsOf(key string, keep func(*member) bool) []*v1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.gangs[key]; e != nil {
		return e.pods(nil, keep)
	}
	return nil
}

// nodesOf lists the nodes of gang key's members keep selects, per PodGroup (nil for an unknown
// gang).
func (c *Cache) nodesOf(key string, keep func(*member) bool) map[string][]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.gangs[key]; e != nil {
		return e.nodes(keep)
	}
	return nil
}

// Unlisted reports whether pod must wait for its PodGang to list it (NeedsListing) and the
// PodGang known to the cache does not list it yet.
func (c *Cache) Unlisted(pod *v1.Pod) bool {
	key, group, ok := GangKey(pod)
	if !ok || !NeedsListing(pod) {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	return e == nil || !e.lists(group, pod.Name)
}

// BaseUnplaced returns the base PodGang that pod's scaled PodGang waits for ("" when it waits
// for none): a pod grove-operator made (NeedsListing) of a PodGang that names a base PodGang
// waits until every PodGroup of the base has minReplicas members bound, so a PodCliqueSet
// replica's minimum is placed before its extra capacity, as the scheduling gate of such pods
// used to wait.
func (c *Cache) BaseUnplaced(pod *v1.Pod) string {
	key, _, ok := GangKey(pod)
	if !ok || !NeedsListing(pod) {
		return ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil {
		return ""
	}
	base := e.podGang.Labels[common.LabelBasePodGang]
	if base == "" {
		return ""
	}
	if b := c.byName[e.namespace][base]; b != nil && b.placedBase() {
		return ""
	}
	return e.namespace + "/" + base
}

// ScaledPending returns the pending present members of the scaled PodGangs that name base (a
// gang key) as their base PodGang and whose quorum is present.
func (c *Cache) ScaledPending(base string) []*v1.Pod {
	ns, name, _ := strings.Cut(base, "/")
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*v1.Pod
	for _, e := range c.byName[ns] {
		if e.podGang != nil && e.quorumPresent && e.podGang.Labels[common.LabelBasePodGang] == name {
			out = e.pods(out, (*member).pendingPresent)
		}
	}
	return out
}

// Pending returns the present members that have no node, to be (re)activated in the queue.
func (c *Cache) Pending(key string) []*v1.Pod { return c.podsOf(key, (*member).pendingPresent) }

// HasClaimants reports whether any member of the gang names a ResourceClaim: the DRA plugin's
// per-member checks cost nothing for gangs without claims.
func (c *Cache) HasClaimants(key string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	return e != nil && e.claimants > 0
}

// AllPending returns the pending present members of every gang.
func (c *Cache) AllPending() []*v1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*v1.Pod
	for _, e := range c.gangs {
		out = e.pods(out, (*member).pendingPresent)
	}
	return out
}

// SetScout records that member uid found the gang unplaceable for lack of room: until the gang
// is placed, cluster changes bring only it back to the queue (Requeue), not every member. A
// gang of hundreds of pods would otherwise be attempted hundreds of times per freed node, each
// attempt failing for the same reason while other gangs wait. Once the scout fits, it brings
// the rest of its gang along (the gang plugin's Reserve).
func (c *Cache) SetScout(key string, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.gangs[key]; e != nil {
		e.scout = uid
	}
}

// ClearScout lets every member of the gang be requeued again.
func (c *Cache) ClearScout(key string) { c.SetScout(key, "") }

// Requeue reports whether a cluster change should bring the pending member back to the queue:
// yes unless another member, still pending, scouts for its gang. The gang plugin also holds
// such a member at PreEnqueue, where the scheduling queue skips it for every event the plugin
// does not register, rather than ask each member of a stuck gang about every pod bound.
func (c *Cache) Requeue(pod *v1.Pod) bool {
	key, _, ok := GangKey(pod)
	if !ok {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.scout == "" || e.scout == pod.UID {
		return true
	}
	scout := e.members[e.scout]
	return scout == nil || !scout.pendingPresent()
}

// Members returns the members with the given UIDs that are still known.
func (c *Cache) Members(key string, uids []types.UID) []*v1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil {
		return nil
	}
	out := make([]*v1.Pod, 0, len(uids))
	for _, uid := range uids {
		if m := e.members[uid]; m != nil {
			out = append(out, m.pod)
		}
	}
	return out
}

// Assumed returns the members that hold an assumed (not yet bound) node.
func (c *Cache) Assumed(key string) []*v1.Pod { return c.podsOf(key, (*member).isAssumed) }

// HeldNodes lists, per PodGroup, the nodes of members that are assumed or bound.
func (c *Cache) HeldNodes(key string) map[string][]string {
	return c.nodesOf(key, (*member).holdsNode)
}

// BoundNodes lists the nodes of bound members per PodGroup.
func (c *Cache) BoundNodes(key string) map[string][]string { return c.nodesOf(key, (*member).isBound) }

// ScheduledAt is when gang key's bound members were bound, as the apiserver recorded it: the
// latest PodScheduled=True transition among them. It is zero when the gang has no bound member
// or one of them does not show the condition yet (the cache has its binding from PostBind,
// before the pod's update arrives).
func (c *Cache) ScheduledAt(key string) time.Time {
	var latest time.Time
	for _, pod := range c.podsOf(key, (*member).isBound) {
		cond := podScheduledCondition(pod)
		if cond == nil || cond.Status != v1.ConditionTrue {
			return time.Time{}
		}
		if t := cond.LastTransitionTime.Time; t.After(latest) {
			latest = t
		}
	}
	return latest
}

func podScheduledCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// DeviceAdvice is the DRA plugin's say in where a gang goes; the zero value changes nothing.
type DeviceAdvice struct {
	// Anchors lists, per PodGroup, nodes where devices already allocated to claims its members
	// use are. They pin the PodGroup's domains as its members' own nodes do.
	Anchors map[string][]string
	// Usable, when not nil, holds the nodes of the domains that still offer the devices the
	// gang needs; the others are not considered.
	Usable map[string]bool
}

// DeviceAdvisor computes a gang's DeviceAdvice from the scheduler's nodes: the DRA plugin.
type DeviceAdvisor interface {
	DeviceAdvice(key string, g Gang, pod *v1.Pod, nodeInfos []fwk.NodeInfo) DeviceAdvice
}

// SetDeviceAdvisor makes a the profile's DeviceAdvisor: its DRA plugin, when enabled.
func (c *Cache) SetDeviceAdvisor(a DeviceAdvisor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advisor = a
}

// DeviceAdvice asks the DRA plugin, if the profile has one, about a gang.
func (c *Cache) DeviceAdvice(key string, g Gang, pod *v1.Pod, nodeInfos []fwk.NodeInfo) DeviceAdvice {
	c.mu.RLock()
	a := c.advisor
	c.mu.RUnlock()
	if a == nil {
		return DeviceAdvice{}
	}
	return a.DeviceAdvice(key, g, pod, nodeInfos)
}

// SharedNodes lists the nodes of assumed or bound members of the other PodGangs that name the
// same shared group as gang key (spec.sharedTopologyConstraint), and the name of one of those
// PodGangs (the one with most such members; by name on a tie). It is nil for a gang without a
// shared group or whose group holds no node yet.
func (c *Cache) SharedNodes(key string) (nodes []string, by string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil || e.podGang.Spec.SharedTopologyConstraint == nil {
		return nil, ""
	}
	ns, group := e.podGang.Namespace, e.podGang.Spec.SharedTopologyConstraint.Group
	most := 0
	for other, o := range c.gangs {
		if other == key || o.podGang == nil || o.podGang.Namespace != ns ||
			o.podGang.Spec.SharedTopologyConstraint == nil || o.podGang.Spec.SharedTopologyConstraint.Group != group {
			continue
		}
		n := 0
		for _, m := range o.members {
			if m.holdsNode() {
				nodes = append(nodes, m.node)
				n++
			}
		}
		if n > most || (n == most && n > 0 && o.podGang.Name < by) {
			most, by = n, o.podGang.Name
		}
	}
	return nodes, by
}

// Waiting is a gang whose quorum is present (every PodGroup has minReplicas members, ungated)
// but not held: some PodGroup has fewer than minReplicas members with a node.
type Waiting struct {
	Key string
	// Entry is where its quorum stands in the order of claims on room.
	Entry order.Entry
	// Gang is the gang as Get reads it; Pod one of its members without a node.
	Gang Gang
	Pod  *v1.Pod
}

// WaitingAhead lists the gangs whose quorum waits and stands strictly ahead of self in the
// order of claims on room (order.Before), most urgent first; only, when set, keeps the PodGangs
// it accepts (asked before their members are read). These are the only gangs self may wait
// for. With thousands of gangs waiting, each is passed over on its highest member priority
// before its entry is computed.
func (c *Cache) WaitingAhead(self order.Entry, only func(*v1alpha1.PodGang) bool) []Waiting {
	c.mu.RLock()
	var out []Waiting
	var pods []*v1.Pod
	for key, e := range c.waiting {
		if key == self.Key || e.podGang == nil || !e.quorumPresent || e.quorumHeld || e.topPriority < self.Priority ||
			only != nil && !only(e.podGang) {
			continue
		}
		entry := e.orderEntry(key, tierOf(e.podGang), e.topPriority)
		if !order.Before(entry, self) {
			continue
		}
		var pod *v1.Pod
		for _, m := range e.members {
			if m.pendingPresent() {
				pod = m.pod
				break
			}
		}
		if pod == nil {
			continue
		}
		out, pods = append(out, Waiting{Key: key, Entry: entry}), append(pods, pod)
	}
	c.mu.RUnlock()
	kept := out[:0]
	for i, w := range out {
		if g, ok := c.Get(w.Key); ok {
			w.Gang, w.Pod = g, pods[i]
			kept = append(kept, w)
		}
	}
	slices.SortFunc(kept, func(a, b Waiting) int { return order.Compare(a.Entry, b.Entry) })
	return kept
}

// Entry is where gang key's claim of tier stands in the order of claims on room; fallback is
// its priority while no quorum member's is known. ok is false while its PodGang is unknown.
func (c *Cache) Entry(key string, tier order.Tier, fallback int32) (order.Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.gangs[key]
	if e == nil || e.podGang == nil {
		return order.Entry{Key: key, Priority: fallback, Tier: tier}, false
	}
	return e.orderEntry(key, tier, fallback), true
}

// QuorumTier is the tier of gang key's quorum: Base, or ScaleOut for a scaled PodGang.
func (c *Cache) QuorumTier(key string) order.Tier {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.gangs[key]; e != nil && e.podGang != nil {
		return tierOf(e.podGang)
	}
	return order.Base
}

// orderEntry computes the record's order.Entry; c.mu is held and e.podGang is set.
func (e *entry) orderEntry(key string, tier order.Tier, fallback int32) order.Entry {
	groups := make([]order.GroupPriority, 0, len(e.podGang.Spec.PodGroups))
	for _, pg := range e.podGang.Spec.PodGroups {
		gp := order.GroupPriority{Min: pg.MinReplicas}
		if g := e.groups[pg.Name]; g != nil && g.hasTemplate {
			gp.Priority, gp.Known = g.template.Priority, true
		}
		groups = append(groups, gp)
	}
	return order.Entry{Key: key, Priority: order.QuorumPriority(groups, fallback), Tier: tier,
		Created: e.podGang.CreationTimestamp.Time, Arrival: e.queue.Arrival}
}

// tierOf is the tier of a PodGang's quorum: a scaled PodGang names its base PodGang.
func tierOf(pg *v1alpha1.PodGang) order.Tier {
	if pg.Labels[common.LabelBasePodGang] != "" {
		return order.ScaleOut
	}
	return order.Base
}

// updateQuorumHeld recomputes quorumHeld after a change of the PodGang or of a member.
func (e *entry) updateQuorumHeld() {
	e.quorumHeld = e.podGang != nil
	if e.podGang == nil {
		return
	}
	for _, pg := range e.podGang.Spec.PodGroups {
		g := e.groups[pg.Name]
		if g == nil && pg.MinReplicas > 0 || g != nil && g.assumed+g.bound < pg.MinReplicas {
			e.quorumHeld = false
			return
		}
	}
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}
