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

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// A placed gang loses members with their node and gets replacements (new pods, same PodGroups).
// A replacement must never wait at the Permit barrier for a quorum that is already bound: one
// that restores the quorum is released at once, one beyond it (the quorum still held) skips the
// barrier, and one whose PodGroup is whole again waits only for the other PodGroup's
// replacement, not for a timeout.
func TestReplacementsDoNotWaitForABoundQuorum(t *testing.T) {
	p, a := testPlugin(t)
	h := &flowHandle{activations: a, waiting: map[types.UID]*waitingPod{}}
	p.handle = h
	ctx := t.Context()
	nodes := []fwk.NodeInfo{cpuNode("spare", "4")}

	// leader: minReplicas 1 of 1; worker: minReplicas 2 of 3. Every member bound.
	p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "leader", MinReplicas: 1}, {Name: "worker", MinReplicas: 2}}}})
	pod := func(name, group, node string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "@" + node),
				Labels: map[string]string{common.LabelPodGang: "g", common.LabelPodClique: group}},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
		}
	}
	leader := record(p, pod("g-leader-0", "leader", "n0"))[0]
	workers := record(p, pod("g-worker-0", "worker", "n1"), pod("g-worker-1", "worker", "n2"), pod("g-worker-2", "worker", "n3"))

	place := func(pod *v1.Pod) (*fwk.Status, fwk.CycleState) {
		t.Helper()
		require.Nil(t, p.PreEnqueue(ctx, pod))
		s, _ := cycle()
		_, st := p.PreFilter(ctx, s, pod, nodes)
		if !st.IsSuccess() {
			return st, s
		}
		require.Nil(t, p.Reserve(ctx, s, pod, "spare"))
		st, _ = p.Permit(ctx, s, pod, "spare")
		return st, s
	}
	lose := func(old *v1.Pod) *v1.Pod {
		p.gangs.DeletePod(old)
		return record(p, pod(old.Name, old.Labels[common.LabelPodClique], ""))[0]
	}

	// An elastic worker is lost: the quorum is still bound, its replacement skips the barrier.
	repl := lose(workers[2])
	st, _ := place(repl)
	require.True(t, st.IsSuccess(), "%v", st)
	p.gangs.Bind(repl, "spare")

	// A quorum worker is lost: its replacement alone restores the quorum and is released.
	repl = lose(workers[1])
	st, _ = place(repl)
	require.True(t, st.IsSuccess(), "the lone replacement completes the quorum: %v", st)
	p.gangs.Bind(repl, "spare")

	// The leader and a worker are lost with one node, the worker first in the queue: its
	// PodGroup still has its two (it is beyond the quorum), so it is placed after the leader,
	// whose replacement restores the quorum and is released at once, bringing the worker back.
	worker := lose(workers[0])
	lead := lose(leader)
	st, _ = place(worker)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code(), "%v", st)
	st, _ = place(lead)
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Contains(t, a.pods, "ns/"+worker.Name, "the deferred worker is retried once the quorum is whole")
	p.gangs.Bind(lead, "spare")
	st, _ = place(worker)
	require.True(t, st.IsSuccess(), "%v", st)
	assert.Empty(t, h.waiting, "nothing waited at the barrier")
	g, _ := p.gangs.Get("ns/g")
	assert.True(t, g.Quorum.Bound(), fmt.Sprint(g.Quorum))
}
