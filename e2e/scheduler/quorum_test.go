package schedulere2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
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

// Base quorums before scale-out (upstream's GS-10 and GS-12): replica 0 of a PodCliqueSet is
// placed; replica 1's base gang (3 pods) waits, and replica 0's scaled gang (2 pods) appears
// once room for it, but not for the base gang, is free. The scaled gang leaves that room to the
// base gang; once the base gang has its nodes, it gets the next ones. A scaled gang of another
// PodCliqueSet does not wait for this one's base gang.
func TestScaledGangsWaitForTheirPodCliqueSetsBaseQuorums(t *testing.T) {
	e := newEnv(t, envOptions{reservationDelay: time.Hour})
	partOf := func(pcs, base string) map[string]string {
		l := map[string]string{common.LabelPartOfKey: pcs}
		if base != "" {
			l[common.LabelBasePodGang] = base
		}
		return l
	}
	e.addNodes(node{name: "n1", cpu: "1"}, node{name: "n2", cpu: "1"}, node{name: "n3", cpu: "1"})
	e.createGang(gang{name: "pcs-0", labels: partOf("pcs", ""), groups: workers(3, "1")})
	e.boundCounts(map[string]int{"pcs-0": 3})
	e.createGang(gang{name: "pcs-1", labels: partOf("pcs", ""), groups: workers(3, "1")})
	e.addNodes(node{name: "n4", cpu: "1"}, node{name: "n5", cpu: "1"})
	e.waitScheduledCondition("pcs-1", metav1.ConditionFalse, "the PodGang needs 3 pods of 1 CPU")

	// Two free nodes: the scaled gang would fit them, the base gang not yet.
	e.createGang(gang{name: "pcs-0-sg-0", labels: partOf("pcs", "pcs-0"), groups: workers(2, "1")})
	e.boundCounts(map[string]int{"pcs-0": 3, "pcs-1": 0, "pcs-0-sg-0": 0})
	e.addNodes(node{name: "n6", cpu: "1"})
	e.boundCounts(map[string]int{"pcs-0": 3, "pcs-1": 3, "pcs-0-sg-0": 0})
	e.addNodes(node{name: "n7", cpu: "1"}, node{name: "n8", cpu: "1"})
	e.boundCounts(map[string]int{"pcs-0": 3, "pcs-1": 3, "pcs-0-sg-0": 2})

	// Another PodCliqueSet's scale-out is not held back by this one's waiting base gang.
	e.createGang(gang{name: "pcs-2", labels: partOf("pcs", ""), groups: workers(3, "1")})
	e.addNodes(node{name: "n9", cpu: "1"})
	e.waitScheduledCondition("pcs-2", metav1.ConditionFalse, "the PodGang needs 3 pods of 1 CPU")
	e.createGang(gang{name: "other-0-sg-0", labels: partOf("other", "other-0"), groups: workers(1, "1")})
	e.boundCounts(map[string]int{"pcs-0": 3, "pcs-1": 3, "pcs-0-sg-0": 2, "pcs-2": 0, "other-0-sg-0": 1})
}
