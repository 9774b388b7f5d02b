package preemption

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

func testPod(name, gang string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	if gang != "" {
		pod.Labels = map[string]string{common.LabelPodGang: gang, common.LabelPodClique: "w"}
	}
	return pod
}

// TestPreemptorWaitsForItsVictimsAndIsRequeuedByTheLastDeletion covers PreEnqueue and the
// queueing hint: a gang that preempted is held back until its last victim is gone, then every
// one of its members is requeued; pods that preempted nothing are left to other plugins.
func TestPreemptorWaitsForItsVictimsAndIsRequeuedByTheLastDeletion(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	p := &Plugin{pods: corelisters.NewPodLister(indexer), inflight: newInflight()}
	victims := []*v1.Pod{testPod("low-0", "low"), testPod("low-1", "low")}
	for _, v := range victims {
		require.NoError(t, indexer.Add(v))
	}
	member0, member1 := testPod("high-0", "high"), testPod("high-1", "high")
	bystander := testPod("other-0", "other")
	p.inflight.start("ns/high", [][]*v1.Pod{victims}, "PodGang ns/low", time.Now().Add(time.Minute))

	ctx := context.Background()
	st := p.PreEnqueue(ctx, member0)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code(), "held back while its victims exist")
	assert.Contains(t, st.Message(), "waiting for 2 preempted pods of PodGang ns/low")
	assert.Nil(t, p.PreEnqueue(ctx, bystander), "a gang that preempted nothing is not held back")

	hint := func(pod, deleted *v1.Pod) fwk.QueueingHint {
		h, err := p.isSchedulableAfterVictimDeleted(klog.Background(), pod, deleted, nil)
		require.NoError(t, err)
		return h
	}
	require.NoError(t, indexer.Delete(victims[0]))
	assert.Equal(t, fwk.QueueSkip, hint(member0, victims[0]), "one victim is left")
	assert.Equal(t, fwk.QueueSkip, hint(bystander, victims[0]), "not a preemptor")

	require.NoError(t, indexer.Delete(victims[1]))
	assert.Equal(t, fwk.Queue, hint(member0, victims[1]), "the last victim is gone")
	assert.Equal(t, fwk.Queue, hint(member1, victims[1]), "every held-back member comes back, not only the first asked")
	assert.Nil(t, p.PreEnqueue(ctx, member1))

	// A victim that never goes away holds the preemptor only until the wait expires.
	stuck := testPod("stuck-0", "stuck")
	require.NoError(t, indexer.Add(stuck))
	p.inflight.start("ns/high", [][]*v1.Pod{{stuck}}, "PodGang ns/stuck", time.Now().Add(-time.Second))
	assert.Nil(t, p.PreEnqueue(ctx, member0), "an expired wait holds nothing")
}

// TestPDBBudgetsAreSpentAcrossUnits: as in DefaultPreemption, what one unit's eviction spends
// of a budget is not there for the next; pods without a node disrupt nothing.
func TestPDBBudgetsAreSpentAcrossUnits(t *testing.T) {
	bound := func(name string) *v1.Pod {
		pod := testPod(name, "g")
		pod.Labels["app"] = "x"
		pod.Spec.NodeName = "n"
		return pod
	}
	pdb := &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"},
		Spec:       policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 1},
	}
	b := newBudgets([]*policy.PodDisruptionBudget{pdb})
	pending := bound("pending")
	pending.Spec.NodeName = ""
	assert.False(t, b.violated([]*v1.Pod{pending}), "a pod without a node disrupts nothing")
	assert.False(t, b.violated([]*v1.Pod{bound("a")}), "within the budget")
	assert.True(t, b.violated([]*v1.Pod{bound("b")}), "the budget was spent by the unit before")
	other := bound("c")
	other.Namespace = "elsewhere"
	assert.False(t, b.violated([]*v1.Pod{other}), "budgets hold in their namespace only")
}
