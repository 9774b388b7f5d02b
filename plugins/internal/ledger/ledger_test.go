package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var policy = Policy{InitialBackoff: time.Second, MaxBackoff: 5 * time.Second, EventInterval: time.Minute}

// gangOf is a gang of PodGroup "a" (min 2) and "b" (min 1).
func gangOf(presentA, assumedA, boundA, presentB, assumedB, boundB int32) Quorum {
	return Quorum{
		{Name: "a", Min: 2, Present: presentA, Assumed: assumedA, Bound: boundA},
		{Name: "b", Min: 1, Present: presentB, Assumed: assumedB, Bound: boundB},
	}
}

func TestQuorum(t *testing.T) {
	cases := []struct {
		name                   string
		q                      Quorum
		wantMissing            string
		wantHeld, wantBound    bool
		wantProgress           string
		wantRemainingA, wantRB int32
	}{
		{"nothing present", gangOf(1, 0, 0, 0, 0, 0),
			`waiting for the gang's members to exist and be ungated: PodGroup "a" has 1 of 2, PodGroup "b" has 0 of 1`,
			false, false, `0 of 3 required pods had a node (PodGroup "a" 0 of 2, PodGroup "b" 0 of 1)`, 2, 1},
		{"present, partly assumed", gangOf(3, 2, 0, 1, 0, 0), "", false, false, `2 of 3 required pods had a node (PodGroup "b" 0 of 1)`, 0, 1},
		{"held by assumed and bound", gangOf(3, 1, 1, 1, 1, 0), "", true, false, "3 of 3 required pods had a node", 0, 0},
		{"bound", gangOf(3, 0, 3, 2, 0, 1), "", true, true, "3 of 3 required pods had a node", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantMissing, tc.q.Missing())
			assert.Equal(t, tc.wantHeld, tc.q.Held())
			assert.Equal(t, tc.wantBound, tc.q.Bound())
			assert.Equal(t, tc.wantProgress, tc.q.Progress())
			assert.Equal(t, map[string]int32{"a": tc.wantRemainingA, "b": tc.wantRB}, tc.q.Remaining())
		})
	}
}

func TestAdmit(t *testing.T) {
	cases := []struct {
		name      string
		q         Quorum
		group     string
		wantKind  Kind
		wantFirst bool
	}{
		{"first member of an attempt checks the whole gang", gangOf(2, 0, 0, 1, 0, 0), "a", Proceed, true},
		{"later member joins the attempt", gangOf(2, 1, 0, 1, 0, 0), "a", Proceed, false},
		{"PodGroup already has its quorum: extras wait for the rest", gangOf(3, 2, 0, 1, 0, 0), "a", Defer, false},
		{"gang placed: extras go without waiting", gangOf(3, 0, 2, 2, 0, 1), "a", Extra, false},
		{"gang assumed but not bound yet: still an extra", gangOf(3, 2, 0, 1, 1, 0), "b", Extra, false},
		{"bound members alone do not make an attempt under way", gangOf(2, 0, 1, 1, 0, 0), "a", Proceed, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(clocktesting.NewFakePassiveClock(time.Now()), policy)
			v := l.Admit("ns/g", "uid", tc.group, tc.q)
			assert.Equal(t, tc.wantKind, v.Kind)
			assert.Equal(t, tc.wantFirst, v.FirstOfAttempt)
		})
	}
}

func TestBarrierReleasesTheWholeGangAtOnce(t *testing.T) {
	l := New(clocktesting.NewFakePassiveClock(time.Now()), policy)
	// a-1 is deferred while the gang is incomplete.
	require.Equal(t, Defer, l.Admit("g", "a-3", "a", gangOf(3, 2, 0, 1, 0, 0)).Kind)

	v := l.Admit("g", "a-1", "a", gangOf(3, 0, 0, 1, 0, 0))
	first, err := l.Reserve("g", v.Epoch)
	require.NoError(t, err)
	assert.True(t, first)
	assert.Equal(t, Wait, l.Permit("g", "a-1", v.Epoch, gangOf(3, 1, 0, 1, 0, 0)).Kind)
	first, err = l.Reserve("g", v.Epoch)
	require.NoError(t, err)
	assert.False(t, first)
	assert.Equal(t, Wait, l.Permit("g", "a-2", v.Epoch, gangOf(3, 2, 0, 1, 0, 0)).Kind)

	got := l.Permit("g", "b-1", v.Epoch, gangOf(3, 2, 0, 1, 1, 0))
	assert.Equal(t, Allow, got.Kind)
	assert.Equal(t, []types.UID{"a-1", "a-2"}, got.Release)
	assert.Equal(t, []types.UID{"a-3"}, got.Activate)

	// After the release a member that loses its node (say, its binding failed) does not abandon
	// the placed gang.
	assert.Nil(t, l.Lost("g", "a-1", v.Epoch, gangOf(3, 2, 0, 1, 1, 0), time.Minute))
}

func TestLostMemberAbandonsTheAttemptAndBacksOff(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	l := New(clk, policy)
	attempt := func() uint64 {
		v := l.Admit("g", "a-1", "a", gangOf(2, 0, 0, 1, 0, 0))
		require.Equal(t, Proceed, v.Kind)
		_, err := l.Reserve("g", v.Epoch)
		require.NoError(t, err)
		require.Equal(t, Wait, l.Permit("g", "a-1", v.Epoch, gangOf(2, 1, 0, 1, 0, 0)).Kind)
		require.Equal(t, Wait, l.Permit("g", "a-2", v.Epoch, gangOf(2, 2, 0, 1, 0, 0)).Kind)
		return v.Epoch
	}
	wantBackoffs := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, want := range wantBackoffs {
		epoch := attempt()
		clk.SetTime(clk.Now().Add(10 * time.Second))
		f := l.Lost("g", "a-2", epoch, gangOf(2, 2, 0, 1, 0, 0), 10*time.Second)
		require.NotNil(t, f, "attempt %d", i)
		assert.Equal(t, []types.UID{"a-1"}, f.Reject, "the other waiting member is rejected with it")
		assert.Equal(t, want, f.Backoff, "attempt %d", i)
		assert.Equal(t, fmt.Sprintf("attempt %d failed: timed out after 10s at the Permit barrier; 2 of 3 required pods had a node (PodGroup \"b\" 0 of 1)", i+1), f.Reason)

		// A member of the abandoned attempt cannot reserve or pass the barrier any more.
		_, err := l.Reserve("g", epoch)
		assert.Error(t, err)
		assert.Equal(t, Reject, l.Permit("g", "a-1", epoch, gangOf(2, 2, 0, 1, 1, 0)).Kind)
		// Rejections of the other members report the same attempt: counted once.
		assert.Nil(t, l.Lost("g", "a-1", epoch, gangOf(2, 1, 0, 1, 0, 0), 10*time.Second))

		v := l.Admit("g", "a-1", "a", gangOf(2, 0, 0, 1, 0, 0))
		assert.Equal(t, BackOff, v.Kind)
		assert.Equal(t, clk.Now().Add(want), v.Until)
		clk.SetTime(v.Until)
	}
	assert.Equal(t, clk.Now().Add(-5*time.Second), l.LastFailure("g"))

	// A successful attempt resets the back-off.
	epoch := attempt()
	require.Equal(t, Allow, l.Permit("g", "b-1", epoch, gangOf(2, 2, 0, 1, 1, 0)).Kind)
	epoch = attempt()
	f := l.Lost("g", "a-1", epoch, gangOf(2, 1, 0, 1, 0, 0), time.Minute)
	require.NotNil(t, f)
	assert.Equal(t, time.Second, f.Backoff)
	assert.Equal(t, `attempt 1 failed: a member lost its node before the gang was complete; 1 of 3 required pods had a node (PodGroup "a" 1 of 2, PodGroup "b" 0 of 1)`, f.Reason)
}

func TestNoNodeAbandonsOnlyWhenTheQuorumIsOutOfReach(t *testing.T) {
	cases := []struct {
		name     string
		q        Quorum
		failures []string // PodGroups of members that found no node, in order
		wantFail bool
	}{
		{"a spare member can still make it", gangOf(3, 1, 0, 1, 0, 0), []string{"a"}, false},
		{"out of members while others hold nodes", gangOf(2, 1, 0, 1, 0, 0), []string{"a"}, true},
		{"out of members, nothing held: stays pending without back-off", gangOf(2, 0, 0, 1, 0, 0), []string{"a", "a"}, false},
		{"second failure exhausts the spare", gangOf(3, 1, 0, 1, 0, 0), []string{"a", "a"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(clocktesting.NewFakePassiveClock(time.Now()), policy)
			v := l.Admit("g", "x", "a", tc.q)
			var f *Failure
			for _, group := range tc.failures {
				f = l.NoNode("g", group, v.Epoch, tc.q, "pod x fits no node")
			}
			if !tc.wantFail {
				assert.Nil(t, f)
				return
			}
			require.NotNil(t, f)
			assert.Equal(t, "attempt 1 failed: pod x fits no node; "+tc.q.Progress(), f.Reason)
		})
	}
}

func TestUnplaceableIsToldOncePerInterval(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	l := New(clk, policy)
	assert.True(t, l.Unplaceable("g", "needs 8 pods; fits 6", WaitNoRoom))
	assert.False(t, l.Unplaceable("g", "needs 8 pods; fits 6", WaitNoRoom))
	assert.False(t, l.Unplaceable("g", "needs 8 pods; fits 5", WaitNoRoom), "a changed count is not a new story")
	assert.Equal(t, "needs 8 pods; fits 5", l.Reason("g"))
	clk.SetTime(clk.Now().Add(policy.EventInterval))
	assert.True(t, l.Unplaceable("g", "needs 8 pods; fits 5", WaitNoRoom))

	// Once placed, a new problem is told at once.
	v := l.Admit("g", "a", "b", gangOf(2, 2, 0, 1, 0, 0))
	require.Equal(t, Allow, l.Permit("g", "a", v.Epoch, gangOf(2, 2, 0, 1, 1, 0)).Kind)
	assert.Empty(t, l.Reason("g"))
	assert.True(t, l.Unplaceable("g", "needs 8 pods; fits 4", WaitNoRoom))
}

func TestUnplaceableSinceCountsFromTheFirstFailureUntilPlaced(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	l := New(clk, policy)
	assert.True(t, l.UnplaceableSince("g").IsZero())
	start := clk.Now()
	l.Unplaceable("g", "needs 8 pods; fits 6", WaitNoRoom)
	clk.SetTime(start.Add(time.Minute))
	l.Unplaceable("g", "needs 8 pods; fits 7", WaitNoRoom)
	assert.Equal(t, start, l.UnplaceableSince("g"), "later failures do not restart the count")

	v := l.Admit("g", "a", "b", gangOf(2, 2, 0, 1, 0, 0))
	require.Equal(t, Allow, l.Permit("g", "a", v.Epoch, gangOf(2, 2, 0, 1, 1, 0)).Kind)
	assert.True(t, l.UnplaceableSince("g").IsZero(), "placed")
}

func TestForgetReturnsWaitingMembers(t *testing.T) {
	l := New(clocktesting.NewFakePassiveClock(time.Now()), policy)
	v := l.Admit("g", "a-1", "a", gangOf(2, 0, 0, 1, 0, 0))
	require.Equal(t, Wait, l.Permit("g", "a-1", v.Epoch, gangOf(2, 1, 0, 1, 0, 0)).Kind)
	assert.Equal(t, []types.UID{"a-1"}, l.Forget("g"))
	assert.Empty(t, l.Forget("g"))
}
