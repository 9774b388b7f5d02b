package gang

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

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

// rackNodeInfo is a node of 1 CPU in rack with pods on it.
func rackNodeInfo(name, rack string, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": rack}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"),
			v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110")}}})
	return ni
}

// A replacement waiting for room in the rack its survivors pin holds elastic members of other
// gangs back only from that rack: they are placed elsewhere meanwhile, kept off its nodes. A
// waiting quorum free to go anywhere still holds them back altogether.
func TestElasticMembersKeepOffTheDomainOfAWaitingReplacement(t *testing.T) {
	for _, tc := range []struct {
		name       string
		constraint *v1alpha1.TopologyConstraint
		// waits: the elastic member is held back; else keptOff are the nodes it keeps off.
		waits   bool
		keptOff []string
	}{
		{name: "survivors pin rack r1", keptOff: []string{"r1-0", "r1-1", "r1-2", "r1-3"},
			constraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To("rack")}}},
		{name: "preferred rack only: it could go anywhere", waits: true,
			constraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Preferred: ptr.To("rack")}}},
		{name: "no pack constraint", waits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := testPlugin(t)
			ctx := t.Context()
			member := func(gang, name, node string) *v1.Pod {
				return &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
						Labels: map[string]string{common.LabelPodGang: gang, common.LabelPodClique: "w"}},
					Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
				}
			}
			// g lost the member of r1-3 (cordoned); its replacement waits: r1's last node is
			// full of another pod.
			p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", Generation: 1},
				Spec: v1alpha1.PodGangSpec{TopologyConstraint: tc.constraint, PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 3}}}})
			survivors := record(p, member("g", "g-0", "r1-0"), member("g", "g-1", "r1-1"))
			record(p, member("g", "g-2", ""))
			setCreated(p, "ns/g", t0)
			p.gangs.MarkQueued("ns/g")
			occupier := member("", "occupier", "r1-2")
			occupier.Labels = nil
			// e has its quorum on r2-0; its elastic member is attempted.
			p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", Generation: 1},
				Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 1}}}})
			e := record(p, member("e", "e-0", "r2-0"), member("e", "e-1", ""))
			setCreated(p, "ns/e", t0.Add(time.Second))
			nodes := []fwk.NodeInfo{rackNodeInfo("r1-0", "r1", survivors[0]), rackNodeInfo("r1-1", "r1", survivors[1]),
				rackNodeInfo("r1-2", "r1", occupier), rackNodeInfo("r1-3", "r1"), rackNodeInfo("r2-0", "r2", e[0]), rackNodeInfo("r2-1", "r2")}

			state, _ := cycle()
			_, st := p.PreFilter(ctx, state, e[1], nodes)
			if tc.waits {
				require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
				assert.Contains(t, st.Message(), "waits while PodGang ns/g")
				return
			}
			require.True(t, st.IsSuccess(), "%v", st)
			var kept []string
			for _, ni := range nodes {
				if st := p.Filter(ctx, state, e[1], ni); !st.IsSuccess() {
					assert.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
					assert.Contains(t, st.Message(), "kept for PodGang ns/g")
					kept = append(kept, ni.Node().Name)
				}
			}
			assert.Equal(t, tc.keptOff, kept)
		})
	}
}
