package dra

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

func claims(names ...string) func(int) []string { return func(int) []string { return names } }

func ownClaim(i int) []string { return []string{[]string{"c0", "c1", "c2", "c3"}[i]} }

func noClaims(int) []string { return nil }

func nodeInfos(nodes ...*v1.Node) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		out[i] = ni
	}
	return out
}

func node(name string, labels ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

func TestPreEnqueueHoldsAMemberUntilItsClaimsExist(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, "", 2, ownClaim)
	ctx := context.Background()

	st := e.p.PreEnqueue(ctx, pods[0])
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, "waiting for ResourceClaim ns/c0 to be created", st.Message())

	// Its own claim exists; the quorum still needs the other member, whose claim does not.
	e.dra.addClaim(gpuClaim("c0", 1))
	st = e.p.PreEnqueue(ctx, pods[0])
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `PodGroup "w" of the gang needs 2 pods but 1 have their ResourceClaims: waiting for ResourceClaim ns/c1 of pod g-1 to be created`, st.Message())

	e.dra.addClaim(gpuClaim("c1", 1))
	assert.Nil(t, e.p.PreEnqueue(ctx, pods[0]))
	assert.Nil(t, e.p.PreEnqueue(ctx, pods[1]))
}

func TestPreEnqueueLetsOthersPass(t *testing.T) {
	e := newTestPlugin(t)
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	assert.Nil(t, e.p.PreEnqueue(context.Background(), plain), "a pod outside gangs")
	noClaim := e.addGang(t, "g", 1, "", 1, noClaims)
	assert.Nil(t, e.p.PreEnqueue(context.Background(), noClaim[0]), "a member without claims")
	// A gang whose quorum is one pod does not wait for an extra member's claim.
	pods := e.addGang(t, "h", 1, "", 2, ownClaim)
	e.dra.addClaim(gpuClaim("c0", 1))
	assert.Nil(t, e.p.PreEnqueue(context.Background(), pods[0]))
}

func TestPreFilterTurnsAwayAGangShortOfDevices(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, "", 2, ownClaim)
	e.dra.addClaim(gpuClaim("c0", 4))
	e.dra.addClaim(gpuClaim("c1", 4))
	e.dra.slices = []*resourcev1.ResourceSlice{gpuSlice("n1", 4), gpuSlice("n2", 2)}
	nodes := nodeInfos(node("n1"), node("n2"))

	_, st := e.p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], nodes)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	want := "DRA: the gang's ResourceClaims need 8 free devices of class gpu.example.com (claims c0, c1), but the nodes it may use offer 6"
	assert.Equal(t, want, st.Message())
	select {
	case ev := <-e.handle.recorder.Events:
		assert.Contains(t, ev, common.EventReasonInsufficientDevices)
		assert.Contains(t, ev, want)
	default:
		t.Fatal("no event about the PodGang")
	}

	// Two more GPUs: the gang fits, and PreFilter stands aside.
	e.dra.slices = append(e.dra.slices, gpuSlice("n3", 2))
	_, st = e.p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], nodeInfos(node("n1"), node("n2"), node("n3")))
	assert.Equal(t, fwk.Skip, st.Code())
}

func TestPreFilterNamesTheBestDomain(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, rackKey, 2, ownClaim)
	e.dra.addClaim(gpuClaim("c0", 4))
	e.dra.addClaim(gpuClaim("c1", 4))
	e.dra.slices = []*resourcev1.ResourceSlice{gpuSlice("n1", 4), gpuSlice("n2", 2), gpuSlice("n3", 6)}
	nodes := nodeInfos(node("n1", rackKey, "r1"), node("n2", rackKey, "r1"), node("n3", rackKey, "r2"))
	_, st := e.p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], nodes)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code())
	assert.Equal(t, `DRA: the gang's ResourceClaims need 8 free devices of class gpu.example.com (claims c0, c1), but the best rack (`+rackKey+`), "r1", offers 6`, st.Message())
}

func TestPreFilterSkips(t *testing.T) {
	e := newTestPlugin(t)
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	noClaim := e.addGang(t, "g", 1, "", 1, noClaims)
	allocated := e.addGang(t, "h", 1, "", 1, claims("done"))
	done := gpuClaim("done", 8)
	done.Status.Allocation = &resourcev1.AllocationResult{}
	e.dra.addClaim(done)
	for name, pod := range map[string]*v1.Pod{"a pod outside gangs": plain, "a gang without claims": noClaim[0], "a gang whose claims are allocated": allocated[0]} {
		_, st := e.p.PreFilter(context.Background(), framework.NewCycleState(), pod, nodeInfos(node("n1")))
		assert.Equal(t, fwk.Skip, st.Code(), name)
	}
}

// Two members share claim "shared", which nobody has allocated: the first member's Reserve
// allocates it (DynamicResources' pending allocation), the plugin shows it allocated, the
// second member waits at Permit until the first is bound.
func inFlightGang(t *testing.T) (*testEnv, []*v1.Pod) {
	t.Helper()
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, "", 2, claims("shared"))
	claim := gpuClaim("shared", 1)
	e.dra.addClaim(claim)
	e.dra.pending[claim.UID] = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "r", Driver: "drv", Pool: "n1", Device: "gpu-0"}}}}
	ctx := context.Background()
	require.Nil(t, e.p.Reserve(ctx, framework.NewCycleState(), pods[0], "n1"))
	require.NotNil(t, e.dra.get("ns", "shared").Status.Allocation, "the claim shows allocated to the scheduler")

	st, timeout := e.p.Permit(ctx, framework.NewCycleState(), pods[1], "n1")
	require.Equal(t, fwk.Wait, st.Code())
	assert.Equal(t, "waiting for the allocation of ResourceClaims [shared] to be written", st.Message())
	assert.Equal(t, inFlightWait, timeout)
	st, _ = e.p.Permit(ctx, framework.NewCycleState(), pods[0], "n1")
	assert.Nil(t, st, "the allocating member does not wait for itself")
	return e, pods
}

func TestPostBindReleasesMembersWaitingForTheAllocation(t *testing.T) {
	e, pods := inFlightGang(t)
	wp := e.handle.wait(pods[1])
	e.p.PostBind(context.Background(), framework.NewCycleState(), pods[0], "n1")
	require.Eventually(t, func() bool { allowed, _ := wp.decisions(); return len(allowed) == 1 }, 5*time.Second, 10*time.Millisecond)
	allowed, rejected := wp.decisions()
	assert.Equal(t, []string{Name}, allowed)
	assert.Empty(t, rejected)
	// The flight is over: a later member holds for nothing.
	st, _ := e.p.Permit(context.Background(), framework.NewCycleState(), pods[1], "n1")
	assert.Nil(t, st)
}

func TestUnreserveRejectsMembersWaitingForAVoidAllocation(t *testing.T) {
	e, pods := inFlightGang(t)
	wp := e.handle.wait(pods[1])
	e.p.Unreserve(context.Background(), framework.NewCycleState(), pods[0], "n1")
	assert.Nil(t, e.dra.get("ns", "shared").Status.Allocation, "the claim shows as the API has it again")
	allowed, rejected := wp.decisions()
	assert.Empty(t, allowed)
	assert.Equal(t, []string{Name + ": pod g-0, which allocated ResourceClaim shared, lost its node"}, rejected)
	// Unreserve is idempotent.
	e.p.Unreserve(context.Background(), framework.NewCycleState(), pods[0], "n1")
	_, rejected = wp.decisions()
	assert.Len(t, rejected, 1)
}

// A claim another plugin already allocated, or none pending, is not the plugin's to show.
func TestReserveLeavesClaimsWithoutAPendingAllocation(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, "", 2, claims("shared"))
	e.dra.addClaim(gpuClaim("shared", 1))
	require.Nil(t, e.p.Reserve(context.Background(), framework.NewCycleState(), pods[0], "n1"))
	assert.Nil(t, e.dra.get("ns", "shared").Status.Allocation)
	st, _ := e.p.Permit(context.Background(), framework.NewCycleState(), pods[1], "n1")
	assert.Nil(t, st)
}

// The advice to the topology plugin: only the racks that still offer the gang's devices, and
// the nodes where devices of claims its members share are already allocated.
func TestAdviseKeepsTheGangToRacksWithItsDevices(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, rackKey, 2, func(i int) []string { return []string{ownClaim(i)[0], "shared"} })
	e.dra.addClaim(gpuClaim("c0", 4))
	e.dra.addClaim(gpuClaim("c1", 4))
	shared := allocated(gpuClaim("shared", 1))
	shared.Status.Allocation.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
		{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n3"}}}}}}
	e.dra.addClaim(shared)
	e.dra.slices = []*resourcev1.ResourceSlice{gpuSlice("n1", 4), gpuSlice("n2", 2), gpuSlice("n3", 4), gpuSlice("n4", 4)}
	nodes := nodeInfos(node("n1", rackKey, "r1"), node("n2", rackKey, "r1"), node("n3", rackKey, "r2"), node("n4", rackKey, "r2"))
	g, ok := e.p.gangs.Get("ns/g")
	require.True(t, ok)

	advice := e.p.DeviceAdvice("ns/g", g, pods[0], nodes)
	assert.Equal(t, map[string]bool{"n3": true, "n4": true}, advice.Usable, "r1 offers 6 GPUs, r2 offers 8")
	assert.Equal(t, map[string][]string{"w": {"n3"}}, advice.Anchors, "the shared claim's device is on n3")

	// Both racks short: no rack is left out (PreFilter says why instead).
	e.dra.slices = e.dra.slices[:3]
	advice = e.p.DeviceAdvice("ns/g", g, pods[0], nodes)
	assert.Nil(t, advice.Usable)
}

// A new slice the scheduler's informer has (its queueing hint requeued the gang) but the DRA
// manager's tracker has not taken in yet still counts: otherwise the requeued gang is turned
// away on the stale count, with no event left to wake it.
func TestPreFilterCountsSlicesTheTrackerHasNotTakenIn(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, "", 2, ownClaim)
	e.dra.addClaim(gpuClaim("c0", 4))
	e.dra.addClaim(gpuClaim("c1", 4))
	e.dra.slices = []*resourcev1.ResourceSlice{gpuSlice("n1", 4), gpuSlice("n2", 2)}
	informer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range append(slices.Clone(e.dra.slices), gpuSlice("n3", 2)) {
		require.NoError(t, informer.Add(s))
	}
	e.p.informerSlices = resourcelisters.NewResourceSliceLister(informer)

	_, st := e.p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], nodeInfos(node("n1"), node("n2"), node("n3")))
	assert.Equal(t, fwk.Skip, st.Code(), "n3's two GPUs make the 8: %s", st.Message())
}
