package gang

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// A rolling update replaces a gang's pods under the same PodGang: the old members are deleted
// and stay bound, terminating, until they are gone, while the replacements are created. The
// replacements are a new quorum: they are placed together through the barrier as soon as they
// fit, not taken for elastic pods of a placed gang, which wait behind every other quorum in the
// queue until the old pods are gone (the rollout's binding stall, issue 41).
func TestReplacementsOfTerminatingMembersArePlacedAsAGang(t *testing.T) {
	p, a := testPlugin(t)
	h := &flowHandle{activations: a, waiting: map[types.UID]*waitingPod{}}
	p.handle = h
	ctx := t.Context()

	// g's old members are bound on n1 and terminate; its replacements are present.
	old := flowGang(p, "g", 2, 2)
	for _, pod := range old {
		pod.Spec.NodeName = "n1"
	}
	record(p, old...)
	setCreated(p, "ns/g", t0.Add(time.Second))
	for _, pod := range old {
		gone := pod.DeepCopy()
		gone.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
		record(p, gone)
	}
	fresh := make([]*v1.Pod, len(old))
	for i, pod := range old {
		fresh[i] = pod.DeepCopy()
		fresh[i].Name, fresh[i].UID, fresh[i].Spec.NodeName = pod.Name+"-new", pod.UID+"-new", ""
	}
	record(p, fresh...)
	// Another gang's quorum, older, waits in the queue: it needs more than n1 has free while
	// the old members are still there.
	record(p, flowGang(p, "other", 3, 3)...)
	setCreated(p, "ns/other", t0)
	p.gangs.MarkQueued("ns/other")
	nodes := []fwk.NodeInfo{framework.NewNodeInfo(old...)}
	nodes[0].SetNode(cpuNode("n1", "4").Node())

	place := func(pod *v1.Pod) *fwk.Status {
		t.Helper()
		require.Nil(t, p.PreEnqueue(ctx, pod))
		s, _ := cycle()
		_, st := p.PreFilter(ctx, s, pod, nodes)
		require.True(t, st.IsSuccess(), "a replacement is attempted while the old members terminate: %v", st)
		require.Nil(t, p.Reserve(ctx, s, pod, "n1"))
		st, _ = p.Permit(ctx, s, pod, "n1")
		return st
	}
	st := place(fresh[0])
	require.Equal(t, fwk.Wait, st.Code(), "the first replacement waits at the barrier for the rest of the new quorum: %v", st)
	h.waiting[fresh[0].UID] = &waitingPod{pod: fresh[0]}
	st = place(fresh[1])
	require.True(t, st.IsSuccess(), "%v", st)
	assert.True(t, h.waiting[fresh[0].UID].allowed, "the new quorum is released together")
}
