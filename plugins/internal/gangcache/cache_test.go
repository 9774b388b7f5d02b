package gangcache

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	"github.com/ai-dynamo/grove/plugins/internal/order"
)

const key = "ns/g"

func podGang(generation int64, mins ...int32) *v1alpha1.PodGang {
	pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", Generation: generation}}
	for i, m := range mins {
		pg.Spec.PodGroups = append(pg.Spec.PodGroups, v1alpha1.PodGroup{Name: []string{"a", "b"}[i], MinReplicas: m})
	}
	return pg
}

func memberPod(uid, group string, tweak ...func(*v1.Pod)) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid),
		Labels: map[string]string{common.LabelPodGang: "g", common.LabelPodClique: group}}}
	for _, f := range tweak {
		f(pod)
	}
	return pod
}

func gated(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "x"}} }

func boundTo(node string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.NodeName = node } }

func terminating(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) listen(k string, ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k == key {
		r.events = append(r.events, ev)
	}
}

func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func TestCountsFollowInformerAndScheduler(t *testing.T) {
	type counts struct{ present, assumed, bound int32 }
	steps := []struct {
		name string
		do   func(c *Cache)
		want counts // of PodGroup "a"
	}{
		{"a gated member is not present", func(c *Cache) { c.UpsertPod(memberPod("1", "a", gated)) }, counts{0, 0, 0}},
		{"ungated, it is", func(c *Cache) { c.UpsertPod(memberPod("1", "a")) }, counts{1, 0, 0}},
		{"the scheduler assumes it", func(c *Cache) { c.Assume(memberPod("1", "a"), "n1") }, counts{1, 1, 0}},
		{"an informer update without a node keeps the assumption", func(c *Cache) { c.UpsertPod(memberPod("1", "a")) }, counts{1, 1, 0}},
		{"Unreserve forgets it", func(c *Cache) { c.Forget(memberPod("1", "a")) }, counts{1, 0, 0}},
		{"assumed again, then bound by the scheduler", func(c *Cache) {
			c.Assume(memberPod("1", "a"), "n1")
			c.Bind(memberPod("1", "a"), "n1")
		}, counts{1, 0, 1}},
		{"a stale informer copy does not unbind it", func(c *Cache) { c.UpsertPod(memberPod("1", "a")) }, counts{1, 0, 1}},
		{"nor does a late Forget", func(c *Cache) { c.Forget(memberPod("1", "a")) }, counts{1, 0, 1}},
		{"a member the informer shows bound", func(c *Cache) { c.UpsertPod(memberPod("2", "a", boundTo("n2"))) }, counts{2, 0, 2}},
		{"a terminating member is neither present nor bound: it holds no place in the gang", func(c *Cache) { c.UpsertPod(memberPod("2", "a", boundTo("n2"), terminating)) }, counts{1, 0, 1}},
		{"deleted members are gone", func(c *Cache) {
			c.DeletePod(memberPod("2", "a"))
			c.DeletePod(memberPod("1", "a"))
		}, counts{0, 0, 0}},
	}
	c := New()
	c.UpsertPodGang(podGang(1, 2, 1))
	for _, s := range steps {
		s.do(c)
		g, ok := c.Get(key)
		require.True(t, ok)
		a, _ := g.Quorum.Group("a")
		assert.Equal(t, s.want, counts{a.Present, a.Assumed, a.Bound}, s.name)
	}
}

func TestQuorumPresentIsToldOnceWhenTheLastMemberArrives(t *testing.T) {
	c := New()
	r := &recorder{}
	c.SetHandler(HandlerFunc(r.listen))
	c.UpsertPod(memberPod("a1", "a"))
	c.UpsertPod(memberPod("b1", "b", gated))
	assert.Empty(t, r.take(), "no PodGang yet")
	c.UpsertPodGang(podGang(1, 1, 1))
	assert.Equal(t, []Event{GangChanged}, r.take(), "b1 is gated")
	c.UpsertPodGang(podGang(1, 1, 1))
	assert.Empty(t, r.take(), "a status update (same generation) is not a change")
	c.UpsertPod(memberPod("b1", "b"))
	assert.Equal(t, []Event{QuorumPresent, MembersChanged}, r.take())
	c.UpsertPod(memberPod("b2", "b"))
	assert.Empty(t, r.take(), "already present")
	g, _ := c.Get(key)
	assert.Equal(t, ledger.Quorum{{Name: "a", Min: 1, Present: 1}, {Name: "b", Min: 1, Present: 2}}, g.Quorum)
	c.DeletePodGang("ns", "g")
	assert.Equal(t, []Event{GangDeleted}, r.take())
	_, ok := c.Get(key)
	assert.False(t, ok)
}

// A member the scheduling queue turned away while it was gated or the quorum was missing must
// be told about when it is ungated after the quorum became present (a replacement pod during a
// rolling update): no scheduler event brings it back.
func TestMemberUngatedAfterTheQuorumIsTold(t *testing.T) {
	c := New()
	r := &recorder{}
	c.SetHandler(HandlerFunc(r.listen))
	c.UpsertPodGang(podGang(1, 1, 1))
	c.AddPodIfMissing(memberPod("a2", "a", gated)) // PreEnqueue saw it first, still gated
	var told []Event
	require.Eventually(t, func() bool {
		told = append(told, r.take()...)
		return len(told) == 2
	}, 10*time.Second, time.Millisecond, "AddPodIfMissing tells listeners from another goroutine")
	assert.Equal(t, []Event{GangChanged, FirstMember}, told, "the gang's first pod, its quorum missing")
	c.UpsertPod(memberPod("a1", "a"))
	c.UpsertPod(memberPod("b1", "b"))
	assert.Equal(t, []Event{QuorumPresent}, r.take())
	c.UpsertPod(memberPod("a2", "a"))
	assert.Equal(t, []Event{MemberPresent, MembersChanged}, r.take())
	c.UpsertPod(memberPod("a2", "a"))
	assert.Empty(t, r.take(), "no change")
	assert.Len(t, c.Pending(key), 3)
}

func TestAddPodIfMissingTellsListenersFromAnotherGoroutine(t *testing.T) {
	c := New()
	c.UpsertPodGang(podGang(1, 1))
	got := make(chan Event, 1)
	var listenerDone sync.Mutex
	listenerDone.Lock()
	c.SetHandler(HandlerFunc(func(k string, ev Event) {
		// PreEnqueue holds the queue's lock; a listener that activates pods takes it too. The
		// cache must not call it on PreEnqueue's goroutine: here, that goroutine holds
		// listenerDone until AddPodIfMissing returned.
		listenerDone.Lock()
		defer listenerDone.Unlock()
		got <- ev
	}))
	c.AddPodIfMissing(memberPod("a1", "a"))
	listenerDone.Unlock()
	select {
	case ev := <-got:
		assert.Equal(t, QuorumPresent, ev)
	case <-time.After(10 * time.Second):
		t.Fatal("listener not told")
	}
	c.AddPodIfMissing(memberPod("a1", "a"))
	g, _ := c.Get(key)
	assert.Equal(t, int32(1), g.Quorum[0].Present, "known pods are not recounted")
}

func TestHeldAndPendingMembers(t *testing.T) {
	c := New()
	c.UpsertPodGang(podGang(1, 2, 1))
	c.UpsertPod(memberPod("a1", "a"))
	c.UpsertPod(memberPod("a2", "a"))
	c.UpsertPod(memberPod("b1", "b", boundTo("n3")))
	c.Assume(memberPod("a1", "a"), "n1")
	assert.Equal(t, map[string][]string{"a": {"n1"}, "b": {"n3"}}, c.HeldNodes(key))
	assert.Equal(t, map[string][]string{"b": {"n3"}}, c.BoundNodes(key))
	var pending []string
	for _, p := range c.Pending(key) {
		pending = append(pending, p.Name)
	}
	assert.Equal(t, []string{"a2"}, pending)
	assert.Len(t, c.Members(key, []types.UID{"a1", "gone"}), 1)
	assert.Equal(t, []*v1.Pod{memberPod("a1", "a")}, c.Assumed(key))
}

func TestHasClaimantsFollowsMembersThatNameClaims(t *testing.T) {
	c := New()
	c.UpsertPodGang(podGang(1, 2))
	plain := memberPod("a1", "a")
	withClaim := memberPod("a2", "a", func(p *v1.Pod) {
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("shared")}}
	})
	c.UpsertPod(plain)
	assert.False(t, c.HasClaimants(key))
	c.UpsertPod(withClaim)
	assert.True(t, c.HasClaimants(key))
	c.UpsertPod(withClaim)
	c.DeletePod(withClaim)
	assert.False(t, c.HasClaimants(key), "an update counts once and a deletion takes it back")
}

// The status writer counts a missing quorum's grace from the gang's first pod: the cache keeps
// the earliest member's creation time and tells, once, when a known gang's first pod arrives
// without completing the quorum.
func TestFirstMemberIsToldOnceAndMembersSinceIsTheEarliestPod(t *testing.T) {
	created := func(at time.Time) func(*v1.Pod) {
		return func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(at) }
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New()
	r := &recorder{}
	c.SetHandler(HandlerFunc(r.listen))
	c.UpsertPodGang(podGang(1, 2, 1))
	g, _ := c.Get(key)
	assert.True(t, g.MembersSince.IsZero(), "no pod yet")
	assert.Equal(t, []Event{GangChanged}, r.take())

	c.UpsertPod(memberPod("a1", "a", created(t0.Add(time.Minute))))
	assert.Equal(t, []Event{FirstMember}, r.take())
	c.UpsertPod(memberPod("a2", "a", created(t0)))
	assert.Empty(t, r.take(), "told once")
	g, _ = c.Get(key)
	assert.Equal(t, t0, g.MembersSince, "the earliest member's creation")

	c.DeletePod(memberPod("a1", "a"))
	c.DeletePod(memberPod("a2", "a"))
	r.take()
	g, _ = c.Get(key)
	assert.True(t, g.MembersSince.IsZero(), "every pod gone: nothing waits")
	c.UpsertPod(memberPod("a3", "a", created(t0.Add(time.Hour))))
	assert.Equal(t, []Event{FirstMember}, r.take(), "a new first pod is told again")
	g, _ = c.Get(key)
	assert.Equal(t, t0.Add(time.Hour), g.MembersSince, "the wait starts from the new pods")

	other := New()
	other.SetHandler(HandlerFunc(r.listen))
	other.UpsertPodGang(podGang(1, 1))
	r.take()
	other.UpsertPod(memberPod("a1", "a", created(t0)))
	assert.Equal(t, []Event{QuorumPresent}, r.take(), "a first pod that completes the quorum leaves nothing to wait for")
}

func TestSharedNodesAreTheOtherGangsOfTheGroup(t *testing.T) {
	c := New()
	gangOf := func(ns, name, group string) *v1alpha1.PodGang {
		pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
			Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "a", MinReplicas: 1}}}}
		if group != "" {
			pg.Spec.SharedTopologyConstraint = &v1alpha1.SharedTopologyConstraint{Group: group}
		}
		return pg
	}
	member := func(ns, gang, uid string, tweak ...func(*v1.Pod)) *v1.Pod {
		p := memberPod(uid, "a", tweak...)
		p.Namespace, p.Labels[common.LabelPodGang] = ns, gang
		return p
	}
	c.UpsertPodGang(gangOf("ns", "p-0", "p-0"))
	c.UpsertPodGang(gangOf("ns", "p-0-w-1", "p-0"))
	c.UpsertPodGang(gangOf("ns", "p-0-w-2", "p-0"))
	c.UpsertPodGang(gangOf("ns", "p-1", "p-1"))
	c.UpsertPodGang(gangOf("other", "p-0", "p-0"))
	c.UpsertPodGang(gangOf("ns", "loner", ""))

	nodes, by := c.SharedNodes("ns/p-0-w-2")
	assert.Empty(t, nodes, "nothing of the group has a node yet")
	assert.Empty(t, by)

	c.UpsertPod(member("ns", "p-0", "b1", boundTo("n1")))
	c.UpsertPod(member("ns", "p-0", "b2", boundTo("n2")))
	c.UpsertPod(member("ns", "p-0-w-1", "w1"))
	c.Assume(member("ns", "p-0-w-1", "w1"), "n3")
	c.UpsertPod(member("ns", "p-0-w-2", "own", boundTo("n9")))
	c.UpsertPod(member("ns", "p-1", "x", boundTo("n7")))
	c.UpsertPod(member("other", "p-0", "y", boundTo("n8")))
	nodes, by = c.SharedNodes("ns/p-0-w-2")
	assert.ElementsMatch(t, []string{"n1", "n2", "n3"}, nodes, "other gangs of the group only: not its own, not another replica's or namespace's")
	assert.Equal(t, "p-0", by, "the gang with most members placed")

	nodes, _ = c.SharedNodes("ns/loner")
	assert.Nil(t, nodes)
}

func TestWaitingQuorumsAreGangsWithTheirQuorumPresentButNotPlaced(t *testing.T) {
	c := New()
	gangOf := func(name string, minReplicas int32) {
		c.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
			Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "a", MinReplicas: minReplicas}}}})
	}
	member := func(gang, uid string, prio int32, tweak ...func(*v1.Pod)) *v1.Pod {
		p := memberPod(uid, "a", tweak...)
		p.Labels[common.LabelPodGang] = gang
		p.Spec.Priority = ptr.To(prio)
		return p
	}
	gangOf("placed", 1)
	c.UpsertPod(member("placed", "p1", 10, boundTo("n1")))
	c.UpsertPod(member("placed", "p2", 10))
	gangOf("waits", 2)
	c.UpsertPod(member("waits", "w1", 10))
	c.UpsertPod(member("waits", "w2", 10))
	gangOf("urgent", 1)
	c.UpsertPod(member("urgent", "u1", 100))
	gangOf("missing", 2)
	c.UpsertPod(member("missing", "m1", 10))
	c.UpsertPod(member("missing", "m2", 10, gated))
	gangOf("low", 1)
	c.UpsertPod(member("low", "l1", 1))
	gangOf("assumed", 1)
	c.UpsertPod(member("assumed", "a1", 10))
	c.Assume(member("assumed", "a1", 10), "n2")

	keys := func(ws []Waiting) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Key)
		}
		return out
	}
	self := func(key string, prio int32) order.Entry {
		return order.Entry{Key: key, Priority: prio, Tier: order.Elastic}
	}
	got := c.WaitingAhead(self("ns/placed", 10), nil)
	assert.Equal(t, []string{"ns/urgent", "ns/waits"}, keys(got),
		"most urgent first; not a gang with its quorum missing, placed, assumed or of a lower priority")
	assert.Equal(t, int32(100), got[0].Entry.Priority)
	assert.Contains(t, []string{"w1", "w2"}, got[1].Pod.Name, "a member without a node stands for the gang")
	assert.Equal(t, []string{"ns/urgent"}, keys(c.WaitingAhead(self("ns/waits", 10), nil)), "never the asking gang itself")
	assert.Equal(t, []string{"ns/urgent", "ns/waits", "ns/low"}, keys(c.WaitingAhead(self("", 0), nil)))
	assert.Equal(t, []string{"ns/waits"}, keys(c.WaitingAhead(self("", 0), func(pg *v1alpha1.PodGang) bool { return pg.Name == "waits" })),
		"only the PodGangs only accepts")

	// Ahead of a quorum: a higher priority, or its priority and an older PodGang.
	quorum, _ := c.Entry("ns/waits", order.Base, 0)
	assert.Equal(t, []string{"ns/urgent"}, keys(c.WaitingAhead(quorum, nil)), "urgent outranks waits; low is below it")
	low, _ := c.Entry("ns/low", order.Base, 0)
	assert.Equal(t, []string{"ns/urgent", "ns/waits"}, keys(c.WaitingAhead(low, nil)), "waits outranks low; urgent too")
}

// TestWaitingQuorumsFollowPlacementChanges: whether a gang holds its quorum is kept with its
// counts, so it follows every change: an assumption forgotten reopens the wait, a PodGang seen
// after its members were bound starts placed, and a PodGang whose minReplicas grows waits again.
func TestWaitingQuorumsFollowPlacementChanges(t *testing.T) {
	c := New()
	gang := func(name string, minReplicas int32, generation int64) {
		c.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation},
			Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "a", MinReplicas: minReplicas}}}})
	}
	member := func(gang, uid string, tweak ...func(*v1.Pod)) *v1.Pod {
		p := memberPod(uid, "a", tweak...)
		p.Labels[common.LabelPodGang] = gang
		return p
	}
	waiting := func() []string {
		// The index WaitingQuorums walks holds exactly the records a full scan would pick.
		c.mu.RLock()
		want, got := map[string]bool{}, map[string]bool{}
		for key, e := range c.gangs {
			if e.podGang != nil && e.quorumPresent && !e.quorumHeld {
				want[key] = true
			}
		}
		for key := range c.waiting {
			got[key] = true
		}
		c.mu.RUnlock()
		assert.Equal(t, want, got, "the waiting index")
		var out []string
		for _, w := range c.WaitingAhead(order.Entry{Tier: order.Elastic}, nil) {
			out = append(out, w.Key)
		}
		return out
	}

	gang("g", 1, 1)
	c.UpsertPod(member("g", "g1"))
	assert.Equal(t, []string{"ns/g"}, waiting())
	c.Assume(member("g", "g1"), "n1")
	assert.Empty(t, waiting(), "assumed")
	c.Forget(member("g", "g1"))
	assert.Equal(t, []string{"ns/g"}, waiting(), "its assumption forgotten, it waits again")

	c.UpsertPod(member("late", "l1", boundTo("n2")))
	c.UpsertPod(member("late", "l2"))
	gang("late", 1, 1)
	assert.Equal(t, []string{"ns/g"}, waiting(), "a PodGang seen after its member was bound is placed")
	gang("late", 2, 2)
	assert.Equal(t, []string{"ns/g", "ns/late"}, waiting(), "minReplicas grew past what is bound")
	c.DeletePodGang("ns", "late")
	assert.Equal(t, []string{"ns/g"}, waiting(), "a deleted PodGang waits for nothing")
	c.UpsertPod(member("g", "g2", terminating))
	c.DeletePod(member("g", "g1"))
	assert.Empty(t, waiting(), "its only present member gone, its quorum is not present")
	c.DeletePod(member("g", "g2"))
	c.DeletePodGang("ns", "g")
	c.DeletePod(member("late", "l1"))
	c.DeletePod(member("late", "l2"))
	assert.Empty(t, waiting())
	assert.Empty(t, c.gangs, "every record gone")
}

// TestScheduledAtIsTheLatestBindingOfTheBoundMembers: the time the apiserver recorded for the
// bindings (PodScheduled), not the time someone asks; unknown while a bound member's update
// has not arrived.
func TestScheduledAtIsTheLatestBindingOfTheBoundMembers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scheduledAt := func(d time.Duration) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(d))}}
		}
	}
	c := New()
	c.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "a", MinReplicas: 2}}}})
	assert.True(t, c.ScheduledAt("ns/g").IsZero(), "no member")
	c.UpsertPod(memberPod("p1", "a", boundTo("n1"), scheduledAt(time.Second)))
	c.UpsertPod(memberPod("p2", "a", boundTo("n2"), scheduledAt(3*time.Second)))
	c.UpsertPod(memberPod("p3", "a"))
	assert.Equal(t, t0.Add(3*time.Second), c.ScheduledAt("ns/g"), "the latest binding; a pending member does not count")
	c.Bind(memberPod("p3", "a"), "n3")
	assert.True(t, c.ScheduledAt("ns/g").IsZero(), "a member bound in the cache whose update has not arrived")
}

// A rolling update replaces a gang's pods under the same PodGang: the old members are deleted
// and stay on their nodes, terminating, until they are gone, while the replacements are created.
// The terminating members do not hold the new quorum (the replacements would be taken for
// elastic pods of a placed gang), pin it to their nodes, nor keep a base PodGang placed.
func TestTerminatingMembersDoNotHoldTheirReplacementsQuorum(t *testing.T) {
	c := New()
	c.UpsertPodGang(podGang(1, 1, 2))
	old := map[string][2]string{"old-a": {"a", "n1"}, "old-b1": {"b", "n2"}, "old-b2": {"b", "n3"}}
	for uid, at := range old {
		c.UpsertPod(memberPod(uid, at[0], boundTo(at[1])))
	}
	g, _ := c.Get(key)
	require.True(t, g.Quorum.Bound())

	for uid, at := range old {
		c.UpsertPod(memberPod(uid, at[0], boundTo(at[1]), terminating))
	}
	fresh := map[string]string{"new-a": "a", "new-b1": "b", "new-b2": "b"}
	for uid, group := range fresh {
		c.UpsertPod(memberPod(uid, group))
	}

	g, _ = c.Get(key)
	assert.False(t, g.Quorum.Held(), "the replacements' quorum has no node yet: %v", g.Quorum)
	assert.Empty(t, g.Quorum.Missing(), "the replacements are present")
	assert.Empty(t, c.HeldNodes(key), "the old members' nodes do not pin the replacements")
	assert.Len(t, c.Pending(key), 3)
	w := c.WaitingAhead(order.Entry{Key: "ns/other", Tier: order.Elastic}, nil)
	if assert.Len(t, w, 1, "the replacements' quorum waits") {
		assert.Equal(t, key, w[0].Key)
	}
	c.mu.RLock()
	placed := c.gangs[key].placedBase()
	c.mu.RUnlock()
	assert.False(t, placed, "a base PodGang whose old members terminate is not placed for its scaled PodGangs")

	// The replacements bind: the quorum is bound again, by them alone.
	for uid, group := range fresh {
		c.Bind(memberPod(uid, group), "n4")
	}
	g, _ = c.Get(key)
	assert.True(t, g.Quorum.Bound(), "%v", g.Quorum)
	assert.Equal(t, map[string][]string{"a": {"n4"}, "b": {"n4", "n4"}}, c.BoundNodes(key))
}
