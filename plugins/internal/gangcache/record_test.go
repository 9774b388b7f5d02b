package gangcache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// Every plugin's state of a gang lives in its one record: deleting the PodGang drops it all at
// once, and the record goes with the gang's last member.
func TestDeletingThePodGangDropsEveryPluginsStateOfTheGang(t *testing.T) {
	c := New()
	pg := podGang(1, 2)
	c.UpsertPodGang(pg)
	member := memberPod("a1", "a")
	c.UpsertPod(member)
	l := ledger.NewWithStore(clock.RealClock{}, ledger.Policy{InitialBackoff: time.Second, MaxBackoff: time.Minute, EventInterval: time.Minute}, c)
	l.Unplaceable(key, "no room", ledger.WaitNoRoom)
	now := time.Now()
	c.SetQueueTime(key, now, false)
	c.Arrive(key, now)
	c.MarkQueued(key)
	c.AddElastic(key)
	c.SetPlan(key, Plan{PodGang: pg})
	c.MissPreference(key, "uid")
	c.SetWritten(key, Written{Status: "written", At: now})
	c.SetScout(key, member.UID)
	require.True(t, c.ShouldTell(key, "overshared", now, time.Hour))
	require.False(t, c.ShouldTell(key, "overshared", now, time.Hour))

	require.Equal(t, "no room", l.Reason(key), "the ledger keeps its state in the record")
	require.Equal(t, QueueTime{At: now, Arrival: now}, c.QueueTime("ns", "g"))
	require.True(t, c.Queued(key))
	require.Equal(t, pg, c.Plan(key).PodGang)
	require.True(t, c.MissedPreference(key, "uid"))
	_, wrote := c.Written(key)
	require.True(t, wrote)

	c.DeletePodGang("ns", "g")
	assert.Empty(t, l.Reason(key))
	assert.Zero(t, l.UnplaceableSince(key))
	assert.Zero(t, c.QueueTime("ns", "g"))
	assert.False(t, c.Queued(key))
	assert.Empty(t, c.TakeElastic())
	assert.Zero(t, c.Plan(key))
	assert.False(t, c.MissedPreference(key, "uid"))
	_, wrote = c.Written(key)
	assert.False(t, wrote)
	assert.True(t, c.Requeue(memberPod("a2", "a")), "no scout is left")
	assert.True(t, c.ShouldTell(key, "overshared", now, time.Hour), "a new PodGang of the name is told afresh")
	assert.Len(t, c.Pending(key), 1, "the member is still known")

	c.DeletePod(member)
	c.mu.RLock()
	defer c.mu.RUnlock()
	assert.Empty(t, c.gangs, "the record goes with the last member")
	assert.Empty(t, c.byName)
}

// A record the plugins asked about is not made by reading it.
func TestReadingAGangsStateMakesNoRecord(t *testing.T) {
	c := New()
	assert.False(t, c.Queued(key))
	assert.Zero(t, c.QueueTime("ns", "g"))
	assert.Zero(t, c.Plan(key))
	assert.False(t, c.Unqueue(key))
	c.SetWritten(key, Written{})
	l := ledger.NewWithStore(clock.RealClock{}, ledger.Policy{}, c)
	_, _, backingOff := l.BackingOff(key)
	assert.False(t, backingOff)
	c.mu.RLock()
	defer c.mu.RUnlock()
	assert.Empty(t, c.gangs)
}

// An event about a gang is sent once per interval for one message; other messages are not held
// back by it.
func TestShouldTellThrottlesEachMessageOfAGang(t *testing.T) {
	c := New()
	c.UpsertPodGang(podGang(1, 1))
	t0 := time.Now()
	assert.True(t, c.ShouldTell(key, "a", t0, time.Minute))
	assert.False(t, c.ShouldTell(key, "a", t0.Add(59*time.Second), time.Minute))
	assert.True(t, c.ShouldTell(key, "b", t0.Add(59*time.Second), time.Minute), "another message")
	assert.True(t, c.ShouldTell(key, "a", t0.Add(time.Minute), time.Minute), "once the interval passed")
	assert.False(t, c.ShouldTell(key, "a", t0.Add(time.Minute+time.Second), time.Minute))
}
