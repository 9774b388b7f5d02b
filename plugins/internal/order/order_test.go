package order

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Every combination of the four rules: for each, a is made ahead of, equal to or behind b, and
// the first rule that tells them apart decides.
func TestCompareEveryRuleCombination(t *testing.T) {
	type side int
	const (
		ahead side = -1
		equal side = 0
		after side = 1
	)
	sides := []side{ahead, equal, after}
	for _, prio := range sides {
		for _, tier := range sides {
			for _, age := range sides {
				for _, arrival := range sides {
					for _, name := range sides {
						a := Entry{Key: "ns/m", Priority: 10, Tier: ScaleOut, Created: t0, Arrival: t0.Add(time.Minute)}
						b := a
						// ahead means a comes first on that rule alone.
						a.Priority -= int32(prio) // higher priority goes first
						a.Tier = Tier(int(a.Tier) + int(tier))
						a.Created = a.Created.Add(time.Duration(age) * time.Second)
						a.Arrival = a.Arrival.Add(time.Duration(arrival) * time.Millisecond)
						a.Key = map[side]string{ahead: "ns/l", equal: "ns/m", after: "ns/n"}[name]
						want := 0
						for _, s := range []side{prio, tier, age, arrival, name} {
							if s != equal {
								want = int(s)
								break
							}
						}
						t.Run(fmt.Sprintf("prio%+d/tier%+d/age%+d/arrival%+d/name%+d", prio, tier, age, arrival, name), func(t *testing.T) {
							if got := Compare(a, b); got != want {
								t.Errorf("Compare(%+v, %+v) = %d, want %d", a, b, got, want)
							}
							if got := Compare(b, a); got != -want {
								t.Errorf("Compare(b, a) = %d, want %d", got, -want)
							}
							if Before(a, b) != (want < 0) || Before(b, a) != (want > 0) {
								t.Errorf("Before disagrees with Compare")
							}
						})
					}
				}
			}
		}
	}
}

// The cases the rules exist for, named.
func TestBefore(t *testing.T) {
	base0 := Entry{Key: "ns/p-0", Priority: 0, Tier: Base, Created: t0}
	base1 := Entry{Key: "ns/p-1", Priority: 0, Tier: Base, Created: t0.Add(time.Minute)}
	scaled0 := Entry{Key: "ns/p-0-sg-x-0", Priority: 0, Tier: ScaleOut, Created: t0}
	elastic0 := Entry{Key: "ns/p-0", Priority: 0, Tier: Elastic, Created: t0}
	high := Entry{Key: "ns/q-0-sg-0", Priority: 100, Tier: ScaleOut, Created: t0.Add(time.Hour)}
	highElastic := Entry{Key: "ns/q-0", Priority: 100, Tier: Elastic, Created: t0.Add(time.Hour)}
	cases := []struct {
		name string
		a, b Entry
		want bool
	}{
		{"a younger replica's base quorum is ahead of an older replica's scale-out", base1, scaled0, true},
		{"scale-out never ahead of a waiting base quorum", scaled0, base1, false},
		{"older base quorum first", base0, base1, true},
		{"quorums before elastic members of the same priority", base1, elastic0, true},
		{"elastic members behind their own gang's quorum tier", elastic0, base0, false},
		{"a higher priority scale-out is ahead of a lower priority base", high, base0, true},
		{"higher priority elastic members are ahead of lower priority quorums", highElastic, base0, true},
		{"an entry is not ahead of itself", base0, base0, false},
		{"same second: the one whose pods arrived first", Entry{Key: "ns/gang-9", Created: t0, Arrival: t0},
			Entry{Key: "ns/gang-10", Created: t0, Arrival: t0.Add(time.Millisecond)}, true},
		{"same second: one whose pods did not arrive yet is behind", Entry{Key: "ns/b", Created: t0, Arrival: t0},
			Entry{Key: "ns/a", Created: t0}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Before(tc.a, tc.b); got != tc.want {
				t.Errorf("Before = %v, want %v", got, tc.want)
			}
		})
	}
}

// No entry waits on another that waits on it: over a mixed set, Before is a strict total order
// (irreflexive, asymmetric, transitive, total).
func TestBeforeHasNoCycles(t *testing.T) {
	var es []Entry
	for _, prio := range []int32{0, 5} {
		for _, tier := range []Tier{Base, ScaleOut, Elastic} {
			for _, age := range []time.Duration{0, time.Second} {
				for _, arrival := range []time.Time{{}, t0, t0.Add(time.Second)} {
					for _, key := range []string{"a/x", "b/x"} {
						es = append(es, Entry{Key: key, Priority: prio, Tier: tier, Created: t0.Add(age), Arrival: arrival})
					}
				}
			}
		}
	}
	for i, a := range es {
		if Before(a, a) {
			t.Fatalf("%+v before itself", a)
		}
		for j, b := range es {
			if i != j && Before(a, b) == Before(b, a) {
				t.Fatalf("%+v and %+v: not exactly one ahead", a, b)
			}
			for _, c := range es {
				if Before(a, b) && Before(b, c) && !Before(a, c) {
					t.Fatalf("not transitive: %+v < %+v < %+v", a, b, c)
				}
			}
		}
	}
}

func TestQuorumPriority(t *testing.T) {
	cases := []struct {
		name     string
		groups   []GroupPriority
		fallback int32
		want     int32
	}{
		{"no groups known: the fallback", []GroupPriority{{Min: 1}}, 7, 7},
		{"the lowest quorum member counts", []GroupPriority{{Min: 1, Priority: 1000000, Known: true}, {Min: 3, Priority: 10, Known: true}}, 1000000, 10},
		{"a group without a quorum (minReplicas 0) does not lower it", []GroupPriority{{Min: 1, Priority: 100, Known: true}, {Min: 0, Priority: 1, Known: true}}, 100, 100},
		{"an unknown group does not count", []GroupPriority{{Min: 1, Priority: 100, Known: true}, {Min: 1}}, 5, 100},
		{"negative priorities", []GroupPriority{{Min: 1, Priority: -5, Known: true}, {Min: 1, Priority: 0, Known: true}}, 0, -5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := QuorumPriority(tc.groups, tc.fallback); got != tc.want {
				t.Errorf("QuorumPriority = %d, want %d", got, tc.want)
			}
		})
	}
}
