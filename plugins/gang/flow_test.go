package gang

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// waitingPod is a member held at Permit; it records what the plugin told it.
type waitingPod struct {
	fwk.WaitingPod
	pod              *v1.Pod
	allowed          bool
	rejected, reason string
}

func (w *waitingPod) GetPod() *v1.Pod { return w.pod }
func (w *waitingPod) Allow(string)    { w.allowed = true }
func (w *waitingPod) Reject(plugin, msg string) bool {
	w.rejected, w.reason = plugin, msg
	return true
}

// flowHandle is the framework as the gang plugin sees it across one gang's cycles: pods it
// activates and pods waiting at Permit.
type flowHandle struct {
	*activations
	waiting map[types.UID]*waitingPod
}

func (h *flowHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	if w, ok := h.waiting[uid]; ok {
		return w
	}
	return nil
}

func (h *flowHandle) IterateOverWaitingPods(fn func(fwk.WaitingPod)) {
	for _, w := range h.waiting {
		fn(w)
	}
}

// cycle is one member's scheduling cycle state, with the framework's PodsToActivate.
func cycle() (fwk.CycleState, *framework.PodsToActivate) {
	state := framework.NewCycleState()
	toActivate := framework.NewPodsToActivate()
	state.Write(framework.PodsToActivateKey, toActivate)
	return state, toActivate
}

// TestGangSchedulingFlow walks a gang through every extension point of the plugin as the
// framework calls them: a member is held out of the queue until the quorum is present, the
// first member of an attempt checks the whole gang and brings the rest of the gang along, the
// members wait at the Permit barrier until the quorum has nodes and are then released together;
// a gang that cannot fit is turned away before any member is assumed, with the cause recorded
// as data; and a member lost at the barrier rejects every waiting member at once.
func TestGangSchedulingFlow(t *testing.T) {
	p, a := testPlugin(t)
	h := &flowHandle{activations: a, waiting: map[types.UID]*waitingPod{}}
	p.handle = h
	ctx := t.Context()
	nodes := []fwk.NodeInfo{cpuNode("n1", "4")}

	// PreEnqueue: the quorum (2 of w) is not present yet.
	pods := flowGang(p, "g", 2, 2)
	record(p, pods[0])
	st := p.PreEnqueue(ctx, pods[0])
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	record(p, pods[1])
	require.Nil(t, p.PreEnqueue(ctx, pods[0]), "the quorum is present")

	// First member: PreFilter admits the attempt, Filter passes, Reserve brings the other
	// member along, Permit holds it at the barrier.
	s0, act0 := cycle()
	_, st = p.PreFilter(ctx, s0, pods[0], nodes)
	require.True(t, st.IsSuccess(), "%v", st)
	require.Nil(t, p.Filter(ctx, s0, pods[0], nodes[0]))
	require.Nil(t, p.Reserve(ctx, s0, pods[0], "n1"))
	assert.Contains(t, act0.Map, "ns/g-1", "the first member brings the rest of the gang along")
	st, _ = p.Permit(ctx, s0, pods[0], "n1")
	require.Equal(t, fwk.Wait, st.Code())
	h.waiting[pods[0].UID] = &waitingPod{pod: pods[0]}

	// Second member: the quorum has nodes — both are released.
	s1, _ := cycle()
	_, st = p.PreFilter(ctx, s1, pods[1], nodes)
	require.True(t, st.IsSuccess(), "%v", st)
	require.Nil(t, p.Reserve(ctx, s1, pods[1], "n1"))
	st, _ = p.Permit(ctx, s1, pods[1], "n1")
	require.True(t, st.IsSuccess(), "%v", st)
	assert.True(t, h.waiting[pods[0].UID].allowed, "the waiting member is released with it")
	delete(h.waiting, pods[0].UID)
	p.PostBind(ctx, s0, pods[0], "n1")
	p.PostBind(ctx, s1, pods[1], "n1")
	g, _ := p.gangs.Get("ns/g")
	assert.True(t, g.Quorum.Held())
	assert.Empty(t, p.ledger.Reason("ns/g"))

	// A gang that cannot fit: turned away at its first member's PreFilter, before any member
	// is assumed; why, as words and as data.
	big := record(p, flowGang(p, "big", 8, 8)...)
	sb, _ := cycle()
	_, st = p.PreFilter(ctx, sb, big[0], nodes)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Contains(t, st.Message(), "the PodGang needs")
	assert.Equal(t, ledger.WaitNoRoom, p.ledger.Cause("ns/big"))
	assert.False(t, p.gangs.RefusedSinceRoomChanged("ns/big"), "short of room, not refused by a filter: it keeps its claim")

	// A member lost at the barrier (its binding failed): every waiting member is rejected at
	// once and the gang backs off.
	pair := record(p, flowGang(p, "pair", 2, 2)...)
	sp0, _ := cycle()
	_, st = p.PreFilter(ctx, sp0, pair[0], nodes)
	require.True(t, st.IsSuccess(), "%v", st)
	require.Nil(t, p.Reserve(ctx, sp0, pair[0], "n1"))
	st, _ = p.Permit(ctx, sp0, pair[0], "n1")
	require.Equal(t, fwk.Wait, st.Code())
	w0 := &waitingPod{pod: pair[0]}
	h.waiting[pair[0].UID] = w0
	sp1, _ := cycle()
	_, st = p.PreFilter(ctx, sp1, pair[1], nodes)
	require.True(t, st.IsSuccess(), "%v", st)
	require.Nil(t, p.Reserve(ctx, sp1, pair[1], "n1"))
	p.Unreserve(ctx, sp1, pair[1], "n1")
	assert.Equal(t, Name, w0.rejected, "the member waiting at the barrier is rejected")
	_, _, backingOff := p.ledger.BackingOff("ns/pair")
	assert.True(t, backingOff)
	assert.Equal(t, ledger.WaitBinding, p.ledger.Cause("ns/pair"))
	st = p.PreEnqueue(ctx, pair[1])
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code(), "held out of the queue while it backs off")
	assert.Contains(t, st.Message(), "backs off")
}

// flowGang records PodGang ns/name with PodGroup "w" of minReplicas min, and returns members
// of one CPU each, not yet recorded (the test adds them as the informer would).
func flowGang(p *Plugin, name string, minReplicas int32, members int) []*v1.Pod {
	p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: minReplicas}}}})
	var pods []*v1.Pod
	for i := range members {
		pods = append(pods, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-%d", name, i), UID: types.UID(fmt.Sprintf("%s-%d", name, i)),
				Labels: map[string]string{common.LabelPodGang: name, common.LabelPodClique: "w"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
		})
	}
	return pods
}

func record(p *Plugin, pods ...*v1.Pod) []*v1.Pod {
	for _, pod := range pods {
		p.gangs.UpsertPod(pod)
	}
	return pods
}

// TestMembersWaitBehindTheScout: once a member finds its gang short of room (the scout), the
// other members are turned away at PreFilter without checking the gang again and sent back
// through PreEnqueue, which holds them: the scheduling queue skips a member held there for
// every event the plugin does not register, where a member left waiting after PreFilter was
// checked at each pod bound elsewhere. The scout goes through; once it gets a node, or once it
// is gone, the others are let in.
func TestMembersWaitBehindTheScout(t *testing.T) {
	p, a := testPlugin(t)
	ctx := t.Context()
	one := []fwk.NodeInfo{cpuNode("n1", "4")}
	big := record(p, flowGang(p, "big", 6, 8)...)
	for _, pod := range big {
		require.Nil(t, p.PreEnqueue(ctx, pod), "no member has scouted yet")
	}

	s0, _ := cycle()
	_, st := p.PreFilter(ctx, s0, big[0], one)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Contains(t, st.Message(), "the PodGang needs", "the first member checks the gang: it scouts")

	a.pods = nil
	s1, _ := cycle()
	_, st = p.PreFilter(ctx, s1, big[1], one)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Contains(t, st.Message(), "another of its members retries it")
	assert.Equal(t, []string{"ns/big-1"}, a.pods, "sent back through PreEnqueue")
	st = p.PreEnqueue(ctx, big[1])
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code(), "held at PreEnqueue while the scout waits")
	assert.Nil(t, p.PreEnqueue(ctx, big[0]), "the scout itself goes through")

	// Room came: the scout gets a node and brings the others along; PreEnqueue lets them in.
	two := []fwk.NodeInfo{cpuNode("n1", "4"), cpuNode("n2", "4")}
	s0, act := cycle()
	_, st = p.PreFilter(ctx, s0, big[0], two)
	require.True(t, st.IsSuccess(), "%v", st)
	require.Nil(t, p.Reserve(ctx, s0, big[0], "n1"))
	assert.Contains(t, act.Map, "ns/big-1")
	assert.Nil(t, p.PreEnqueue(ctx, big[1]), "the scout has a node")

	// A scout that is gone lets the others in at once.
	other := record(p, flowGang(p, "other", 6, 8)...)
	so, _ := cycle()
	_, st = p.PreFilter(ctx, so, other[0], one)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	require.Equal(t, fwk.UnschedulableAndUnresolvable, p.PreEnqueue(ctx, other[1]).Code())
	a.pods = nil
	p.gangs.DeletePod(other[0])
	assert.Contains(t, a.pods, "ns/other-1", "the members it held are activated")
	assert.Nil(t, p.PreEnqueue(ctx, other[1]))
}
