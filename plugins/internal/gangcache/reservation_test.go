package gangcache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

func TestReservationExcludesOnlyOutrankedGangsFromItsNodes(t *testing.T) {
	now := time.Now()
	r := &Reservation{Key: "ns/big", Priority: 10, Since: now, Nodes: sets.New("n1", "n2"), Expires: now.Add(time.Minute)}
	cases := []struct {
		name string
		key  string
		prio int32
		node string
		at   time.Time
		want bool
	}{
		{"another gang of the same priority", "ns/small", 10, "n1", now, true},
		{"another gang of a lower priority", "ns/small", 5, "n2", now, true},
		{"a gang of a higher priority", "ns/urgent", 11, "n1", now, false},
		{"the gang itself", "ns/big", 10, "n1", now, false},
		{"a node not reserved", "ns/small", 10, "n3", now, false},
		{"after it expired", "ns/small", 10, "n1", now.Add(time.Minute), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, r.Excludes(tc.key, tc.prio, tc.node, tc.at))
		})
	}
	var none *Reservation
	assert.False(t, none.Excludes("ns/small", 0, "n1", now), "no reservation excludes nothing")
}

func TestOneReservationAtATimeForTheGangThatWaitsLongest(t *testing.T) {
	now := time.Now()
	res := func(key string, prio int32, since time.Duration) *Reservation {
		return &Reservation{Key: key, Priority: prio, Since: now.Add(-since), Nodes: sets.New("n1"), Expires: now.Add(time.Minute)}
	}
	c := New()
	assert.True(t, c.Reserve(res("ns/a", 0, time.Minute), now))
	assert.False(t, c.Reserve(res("ns/b", 0, time.Second), now), "a gang waiting less does not take it over")
	assert.True(t, c.Reserve(res("ns/c", 0, time.Hour), now), "one waiting longer does")
	assert.True(t, c.Reserve(res("ns/d", 1, 0), now), "a higher priority outranks any wait")
	assert.True(t, c.Reserve(res("ns/d", 1, 0), now), "its gang renews it")
	assert.Equal(t, "ns/d", c.Reservation().Key)

	c.Release("ns/c")
	assert.Equal(t, "ns/d", c.Reservation().Key, "only the holder releases")
	c.Release("ns/d")
	assert.Nil(t, c.Reservation())

	assert.True(t, c.Reserve(res("ns/e", 5, 0), now))
	assert.True(t, c.Reserve(res("ns/f", 0, 0), now.Add(2*time.Minute)), "an expired reservation is taken over")
}

func TestOnlyTheScoutIsRequeuedForAnUnplaceableGang(t *testing.T) {
	c := New()
	c.UpsertPodGang(podGang(1, 2))
	a1, a2 := memberPod("a1", "a"), memberPod("a2", "a")
	c.UpsertPod(a1)
	c.UpsertPod(a2)
	outsider := memberPod("x", "a")
	delete(outsider.Labels, common.LabelPodGang)

	assert.True(t, c.Requeue(a1))
	assert.True(t, c.Requeue(a2))
	c.SetScout(key, a1.UID)
	assert.True(t, c.Requeue(a1), "the scout")
	assert.False(t, c.Requeue(a2), "the scout brings it along once the gang fits")
	assert.True(t, c.Requeue(outsider), "pods outside gangs")

	c.DeletePod(a1)
	assert.True(t, c.Requeue(a2), "a scout that is gone scouts for nobody")
	c.UpsertPod(a1)
	c.Assume(a1, "n1")
	assert.True(t, c.Requeue(a2), "nor one that has a node")
	c.Forget(a1)
	c.ClearScout(key)
	assert.True(t, c.Requeue(a2))
}
