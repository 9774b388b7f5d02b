package schedulere2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// settle is how long a count must hold once reached.
const settle = 3 * time.Second

// boundCounts waits until every gang has exactly the given number of bound pods, then checks
// that the counts hold for the settle window.
func (e *env) boundCounts(want map[string]int) {
	e.t.Helper()
	state := func() (bool, string) {
		ok, s := true, ""
		for _, name := range sortedNames(want) {
			n := e.placement(name).total()
			ok = ok && n == want[name]
			s += fmt.Sprintf("%s=%d (want %d) ", name, n, want[name])
		}
		return ok, s
	}
	e.eventually("the bound counts", state)
	e.holds("the bound counts", settle, state)
}

func sortedNames(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Quorums before elastic pods: "elastic" has its quorum (1 pod) placed and two pods beyond it;
// "waiting" needs 2 pods for its quorum. As nodes are added one by one, the elastic pods leave
// them to the waiting quorum — even the one node that alone cannot hold it — and get only what
// is left once no quorum waits.
func TestElasticPodsWaitForOtherGangsQuorums(t *testing.T) {
	e := newEnv(t, envOptions{reservationDelay: time.Hour})
	e.addNodes(node{name: "n1", cpu: "1"})
	e.createGang(gang{name: "elastic", groups: []group{{name: "w", min: 1, replicas: 3, cpu: "1"}}})
	e.boundCounts(map[string]int{"elastic": 1})
	e.createGang(gang{name: "waiting", groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1"}}})
	e.waitScheduledCondition("waiting", metav1.ConditionFalse, "the PodGang needs 2 pods of 1 CPU")

	// One free node: the waiting quorum does not fit yet, but the elastic pods keep off it.
	e.addNodes(node{name: "n2", cpu: "1"})
	e.boundCounts(map[string]int{"elastic": 1, "waiting": 0})
	// Two: the quorum is placed.
	e.addNodes(node{name: "n3", cpu: "1"})
	e.boundCounts(map[string]int{"elastic": 1, "waiting": 2})
	// No quorum waits: the elastic pods take what comes.
	e.addNodes(node{name: "n4", cpu: "1"})
	e.boundCounts(map[string]int{"elastic": 2, "waiting": 2})
	e.addNodes(node{name: "n5", cpu: "1"}, node{name: "n6", cpu: "1"})
	e.boundCounts(map[string]int{"elastic": 3, "waiting": 2})
}

// A quorum that could not fit even on empty nodes does not hold elastic pods back: keeping
// room free for it would help nobody.
func TestElasticPodsAreNotHeldBackByAQuorumThatCannotFit(t *testing.T) {
	e := newEnv(t, envOptions{reservationDelay: time.Hour})
	e.addNodes(node{name: "n1", cpu: "1"}, node{name: "n2", cpu: "1"})
	// 3 nodes would be needed: more than the cluster has.
	e.createGang(gang{name: "huge", groups: workers(3, "1")})
	e.waitScheduledCondition("huge", metav1.ConditionFalse, "the PodGang needs 3 pods of 1 CPU")
	e.createGang(gang{name: "elastic", groups: []group{{name: "w", min: 1, replicas: 2, cpu: "1"}}})
	e.boundCounts(map[string]int{"elastic": 2, "huge": 0})
}

// Quorums before elastic pods when room appears in a cluster that had none: no pod was ever
// attempted (kube-scheduler attempts none without nodes), so no gang was found short of room.
// Both quorums (3 + 3) are placed, not one gang's quorum with its elastic pods; then the
// elastic pods get what is left.
func TestQuorumsNotYetAttemptedHoldElasticPodsBack(t *testing.T) {
	e := newEnv(t, envOptions{reservationDelay: time.Hour})
	e.createGang(gang{name: "first", groups: []group{{name: "w", min: 3, replicas: 6, cpu: "1"}}})
	e.createGang(gang{name: "second", groups: []group{{name: "w", min: 3, replicas: 6, cpu: "1"}}})
	e.boundCounts(map[string]int{"first": 0, "second": 0})
	var nodes []node
	for i := range 6 {
		nodes = append(nodes, node{name: fmt.Sprintf("n%d", i), cpu: "1"})
	}
	e.addNodes(nodes...)
	e.boundCounts(map[string]int{"first": 3, "second": 3})
	nodes = nodes[:0]
	for i := 6; i < 12; i++ {
		nodes = append(nodes, node{name: fmt.Sprintf("n%d", i), cpu: "1"})
	}
	e.addNodes(nodes...)
	e.boundCounts(map[string]int{"first": 6, "second": 6})
}
