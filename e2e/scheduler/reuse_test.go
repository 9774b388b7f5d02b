package schedulere2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// roll replaces every pod of gang g as an update does: the pods go, the PodGang keeps its name
// and now names itself in spec.reuseReservationRef (with the reuse policy as grove-operator
// writes it), and the new pods come.
func (e *env) roll(g gang, policy string) {
	e.t.Helper()
	e.deleteGangPods(g.name)
	pg := e.podGang(g.name)
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.ReuseReservationRef = &v1alpha1.NamespacedName{Namespace: e.ns, Name: g.name}
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[common.AnnotationReuseReservation] = policy
	require.NoError(e.t, e.podGangs.Patch(context.Background(), pg, patch))
	mins := map[string]int32{}
	var pods []*v1.Pod
	for _, gr := range g.groups {
		mins[gr.name] = gr.min
		for i := range gr.replicas {
			pods = append(pods, e.memberPod(g, gr, i))
		}
	}
	e.checker.expect(g.name, mins)
	e.createPods(pods)
}

func nodeSet(p placement) []string {
	var out []string
	for n := range p.nodes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Placement reuse: a gang whose pods are replaced goes back to the rack (and nodes) it had,
// although another rack is now the tighter fit; with reuse required it waits for its rack
// rather than move, and says so.
func TestReuseReservation(t *testing.T) {
	// r1: 6 nodes of 4 CPU; r2: 2 nodes of 4 CPU, the tight fit for an 8-CPU gang.
	setup := func(t *testing.T) (*env, gang, []string) {
		e := newEnv(t, envOptions{})
		e.addNodes(rack("a", "4", "r1"), rack("b", "4", "r1"), rack("c", "4", "r1"), rack("d", "4", "r1"),
			rack("e", "4", "r1"), rack("f", "4", "r1"), rack("g", "4", "r2"), rack("h", "4", "r2"))
		blocker := gang{name: "blocker", constraint: required(rackKey), groups: workers(2, "4")}
		e.createGang(blocker)
		onlyOn(t, e.waitBound("blocker", 2), e.nodesWithLabel(rackKey, "r2"), "blocker takes the tight rack")
		g := gang{name: "served", constraint: required(rackKey), groups: workers(4, "2")}
		e.createGang(g)
		first := e.waitBound("served", 4)
		onlyOn(t, first, e.nodesWithLabel(rackKey, "r1"), "served")
		var recorded []string
		e.eventually("served's placement to be recorded", func() (bool, string) {
			lp := e.podGang("served").Status.LastPlacement
			if lp == nil {
				return false, "no lastPlacement"
			}
			recorded = lp.Nodes
			return slices.Equal(lp.Nodes, nodeSet(first)), fmt.Sprintf("%v, bound on %v", lp.Nodes, nodeSet(first))
		})
		e.deleteGangPods("blocker")
		return e, g, recorded
	}

	t.Run("preferred: back to its rack and nodes, not to the tighter rack", func(t *testing.T) {
		e, g, before := setup(t)
		e.roll(g, "Preferred")
		after := e.waitBound("served", 4)
		onlyOn(t, after, e.nodesWithLabel(rackKey, "r1"), "served after the roll")
		for _, n := range nodeSet(after) {
			assert.Contains(t, before, n, "back on the nodes it had")
		}
		// The score comes with the gang's status write, which may follow the last binding.
		e.eventually("served's placement score", func() (bool, string) {
			score := e.podGang("served").Status.PlacementScore
			if score == nil {
				return false, "no placement score yet"
			}
			return *score == 1.0, fmt.Sprintf("placement score %v", *score)
		})
	})

	t.Run("required: waits for its rack while another gang holds it", func(t *testing.T) {
		e, g, _ := setup(t)
		e.deleteGangPods("served")
		// 20 CPU in one rack: only r1 holds it, leaving 4 CPU there.
		e.createGang(gang{name: "intruder", constraint: required(rackKey), groups: workers(5, "4")})
		onlyOn(t, e.waitBound("intruder", 5), e.nodesWithLabel(rackKey, "r1"), "intruder")
		e.roll(g, "Required")
		e.eventually("served to wait for its rack", func() (bool, string) {
			cond := apimeta.FindStatusCondition(e.podGang("served").Status.Conditions, v1alpha1.PodGangConditionScheduled)
			if cond == nil {
				return false, "no Scheduled condition"
			}
			return cond.Status == metav1.ConditionFalse && cond.Reason == common.ReasonReservationReuseRequired,
				fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
		})
		assert.Contains(t, e.scheduledMessage("served"), `within rack "r1"`)
		assert.Zero(t, e.placement("served").total(), "nothing bound in r2, which holds it")
		e.deleteGangPods("intruder")
		onlyOn(t, e.waitBound("served", 4), e.nodesWithLabel(rackKey, "r1"), "served once its rack has room")
		assert.NotNil(t, e.podGang("served").Status.LastPlacement, "the placement outlives the pods")
	})
}
