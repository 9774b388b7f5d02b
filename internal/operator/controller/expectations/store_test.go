package expectations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newStore() (*Store, *clock) {
	c := &clock{t: time.Unix(1000, 0)}
	s := New(time.Minute)
	s.now = c.now
	return s, c
}

func TestPendingCreationsCountUntilTheCacheShowsThePod(t *testing.T) {
	s, _ := newStore()
	s.ExpectCreation("ns/a", "u1", 0)
	s.ExpectCreation("ns/a", "u2", 1)

	p := s.Pending("ns/a", map[types.UID]bool{})
	assert.Equal(t, []Creation{{UID: "u1", Index: 0}, {UID: "u2", Index: 1}}, p.Creations, "stale cache: both still in flight")

	p = s.Pending("ns/a", map[types.UID]bool{"u1": true})
	assert.Equal(t, []Creation{{UID: "u2", Index: 1}}, p.Creations)

	assert.Empty(t, s.Pending("ns/a", map[types.UID]bool{"u1": true, "u2": true}).Creations)
	assert.Empty(t, s.Pending("ns/b", nil).Creations, "owners are independent")
}

// TestAnAddedPodStaysPendingUntilAListShowsIt: a reconcile lists the pods (u2 is not in the
// cache yet), the informer then adds u2 and tells the store, and the reconcile settles its
// expectations against its list: u2 must still count as in flight, or the reconcile creates a
// pod for it again. It failed before: the add event cleared the creation, and
// TestScaleOutOfAHundredPods saw 103 pods created for 100 on a loaded machine.
func TestAnAddedPodStaysPendingUntilAListShowsIt(t *testing.T) {
	s, _ := newStore()
	s.ExpectCreation("ns/a", "u1", 0)
	s.ExpectCreation("ns/a", "u2", 1)
	listed := map[types.UID]bool{"u1": true} // the reconcile's list, taken before u2's event
	s.Observed("ns/a", "u2", false)
	assert.Equal(t, []Creation{{UID: "u2", Index: 1}}, s.Pending("ns/a", listed).Creations)
	assert.Empty(t, s.Pending("ns/a", map[types.UID]bool{"u1": true, "u2": true}).Creations, "the next list shows it")
}

func TestPendingDeletionsCountWhileTheCacheShowsThePodLive(t *testing.T) {
	cases := []struct {
		name    string
		live    map[types.UID]bool
		pending bool
	}{
		{"cache still shows it live", map[types.UID]bool{"u1": true}, true},
		{"cache shows it terminating", map[types.UID]bool{"u1": false}, false},
		{"cache no longer has it", map[types.UID]bool{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore()
			s.ExpectDeletion("ns/a", "u1")
			assert.Equal(t, tc.pending, s.Pending("ns/a", tc.live).Deletions["u1"])
		})
	}
}

func TestObservedDeletionClearsACreationNeverListed(t *testing.T) {
	s, _ := newStore()
	s.ExpectCreation("ns/a", "u1", 0)
	s.Observed("ns/a", "u1", true)
	assert.Empty(t, s.Pending("ns/a", nil).Creations)
}

func TestExpectationsExpire(t *testing.T) {
	s, c := newStore()
	s.ExpectCreation("ns/a", "u1", 0)
	s.ExpectDeletion("ns/a", "u2")
	c.t = c.t.Add(2 * time.Minute)
	p := s.Pending("ns/a", map[types.UID]bool{"u2": true})
	assert.Empty(t, p.Creations)
	assert.Empty(t, p.Deletions)
}

func TestCancelAndForget(t *testing.T) {
	s, _ := newStore()
	s.ExpectDeletion("ns/a", "u1")
	s.CancelDeletion("ns/a", "u1")
	assert.Empty(t, s.Pending("ns/a", map[types.UID]bool{"u1": true}).Deletions)

	s.ExpectCreation("ns/a", "u2", 3)
	s.Forget("ns/a")
	assert.Empty(t, s.Pending("ns/a", nil).Creations)
}
