package schedulere2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
	"github.com/ai-dynamo/grove/pkg/api/common"
)

// draEnv publishes devices of a driver and a DeviceClass of its own, so tests sharing the
// apiserver never see each other's devices.
type draEnv struct {
	*env
	driver, class string
}

func newDRAEnv(t *testing.T, opts envOptions) *draEnv {
	e := newEnv(t, opts)
	d := &draEnv{env: e, driver: e.ns + ".grove.test", class: e.ns + "-gpu"}
	_, err := e.admin.ResourceV1().DeviceClasses().Create(e.ctx, &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: d.class, Labels: map[string]string{nodeTestLabel: e.ns}},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", d.driver)}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sel := metav1.ListOptions{LabelSelector: nodeTestLabel + "=" + e.ns}
		assert.NoError(t, e.admin.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
		assert.NoError(t, e.admin.ResourceV1().DeviceClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	})
	return d
}

// publish puts n devices on a node, as a DRA driver's ResourceSlice for that node would.
func (d *draEnv) publish(nodeShort string, n int) {
	d.t.Helper()
	nodeName := d.nodeName(nodeShort)
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{nodeTestLabel: d.ns}},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   d.driver,
			Pool:     resourcev1.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
			NodeName: &nodeName,
		},
	}
	for i := range n {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	_, err := d.admin.ResourceV1().ResourceSlices().Create(d.ctx, slice, metav1.CreateOptions{})
	require.NoError(d.t, err)
}

// claim creates a ResourceClaim for one device of the test's class, as grove-operator makes
// the claims of resourceSharing entries.
func (d *draEnv) claim(name string) {
	d.t.Helper()
	_, err := d.admin.ResourceV1().ResourceClaims(d.ns).Create(d.ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: d.class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}, metav1.CreateOptions{})
	require.NoError(d.t, err)
}

func (d *draEnv) getClaim(name string) *resourcev1.ResourceClaim {
	d.t.Helper()
	c, err := d.admin.ResourceV1().ResourceClaims(d.ns).Get(d.ctx, name, metav1.GetOptions{})
	require.NoError(d.t, err)
	return c
}

// allocatedTo returns the node of a claim's single node-local device ("" while unallocated).
func allocatedTo(c *resourcev1.ResourceClaim) string {
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
		return ""
	}
	return c.Status.Allocation.Devices.Results[0].Pool
}

// uses makes a member reference claims the way grove-operator's pods do.
func uses(claims ...string) func(*v1.Pod) {
	return func(pod *v1.Pod) { resourceclaim.Inject(&pod.Spec, claims) }
}

// ownClaim makes a member reference the claim named after it ("<pod>-gpu"), like a clique's
// PerReplica claim.
func ownClaim(pod *v1.Pod) { resourceclaim.Inject(&pod.Spec, []string{pod.Name + "-gpu"}) }

// TestDRASharedClaimPinsTheGangToItsDevices: a gang whose members share an AllReplicas claim
// that is already allocated is placed where the claim's device is, though the topology plugin
// alone would pick a tighter rack; every member references the same allocated claim. The claim
// is shared by more pods than DRAArgs allows (2 here), which an event on the PodGang reports.
func TestDRASharedClaimPinsTheGangToItsDevices(t *testing.T) {
	d := newDRAEnv(t, envOptions{reservedForLimit: 2})
	d.addNodes(rack("a", "8", "r1"), rack("b", "8", "r2"), rack("c", "8", "r2"))
	d.publish("a", 1)
	d.publish("b", 1)
	d.claim("shared")

	// The claim gets its device on b, through a first gang that must run there.
	d.createGang(gang{name: "first", groups: []group{{name: "w", min: 1, replicas: 1, cpu: "1", pod: func(p *v1.Pod) {
		uses("shared")(p)
		p.Spec.NodeSelector = map[string]string{v1.LabelHostname: d.nodeName("b")}
	}}}})
	d.waitBound("first", 1)
	d.eventually("claim shared allocated on b", func() (bool, string) {
		node := allocatedTo(d.getClaim("shared"))
		return node == d.nodeName("b"), "allocated to " + node
	})

	// 4 CPU fit rack r1 tighter (8 free) than r2 (15 free); the claim's device is on b in r2.
	d.createGang(gang{name: "second", constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 2, cpu: "2", pod: uses("shared")}}})
	p := d.waitBound("second", 2)
	assert.Equal(t, map[string]int{d.nodeName("b"): 2}, p.nodes, "with the device the members share")
	d.eventually("the claim reserved for all three pods", func() (bool, string) {
		c := d.getClaim("shared")
		var names []string
		for _, r := range c.Status.ReservedFor {
			names = append(names, r.Name)
		}
		sort.Strings(names)
		return strings.Join(names, ",") == "first-w-0,second-w-0,second-w-1" && allocatedTo(c) == d.nodeName("b"), strings.Join(names, ",")
	})
	for _, pod := range d.pods("second") {
		require.Len(t, pod.Spec.ResourceClaims, 1)
		assert.Equal(t, "shared", *pod.Spec.ResourceClaims[0].ResourceClaimName)
	}
	d.eventually("an event about the overshared claim", func() (bool, string) {
		events := d.gangEvents("second", common.EventReasonResourceClaimOvershared)
		if len(events) == 0 {
			return false, "no event"
		}
		return strings.Contains(events[0].Note, "ResourceClaim shared is shared by 3 pods, but a ResourceClaim can be reserved for at most 2 pods"), events[0].Note
	})
	assert.Empty(t, d.gangEvents("first", common.EventReasonResourceClaimOvershared), "one sharer is within the limit")
}

// TestDRAGangMembersShareAnUnallocatedClaim: three members of one gang share a claim nobody
// has allocated yet. The first member's allocation stays in flight while it waits at the
// Permit barrier; the others must still reach the barrier (on the node of the device) instead
// of being turned away until the barrier times out. The claim ends up allocated there, with
// its finalizer, and reserved for all three.
func TestDRAGangMembersShareAnUnallocatedClaim(t *testing.T) {
	d := newDRAEnv(t, envOptions{permitTimeout: time.Minute})
	d.addNodes(node{name: "a", cpu: "8"}, node{name: "b", cpu: "8"})
	d.publish("b", 1)
	d.claim("shared")
	d.createGang(gang{name: "trio", groups: []group{{name: "w", min: 3, replicas: 3, cpu: "1", pod: uses("shared")}}})
	p := d.waitBound("trio", 3)
	assert.Equal(t, map[string]int{d.nodeName("b"): 3}, p.nodes, "with the device the members share")
	c := d.getClaim("shared")
	assert.Equal(t, d.nodeName("b"), allocatedTo(c))
	assert.Len(t, c.Status.ReservedFor, 3)
	assert.Contains(t, c.Finalizers, resourcev1.Finalizer)
}

// TestDRADeviceCountSteersAndRejectsGangs: the domain choice only considers racks that still
// offer the gang's devices; a gang that needs more devices than any rack offers stays pending
// with a DRA reason, before any member is assumed; new devices make it fit, published after
// their node.
func TestDRADeviceCountSteersAndRejectsGangs(t *testing.T) {
	d := newDRAEnv(t, envOptions{})
	d.addNodes(rack("a", "2", "r1"), rack("b", "8", "r2"), rack("c", "8", "r2"))
	d.publish("b", 1)
	d.publish("c", 1)
	for _, name := range []string{"pair-w-0-gpu", "pair-w-1-gpu", "big-w-0-gpu", "big-w-1-gpu"} {
		d.claim(name)
	}

	// By CPU alone rack r1 is the tight fit for 2 CPU, but it has no devices.
	d.createGang(gang{name: "pair", constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1", pod: ownClaim}}})
	p := d.waitBound("pair", 2)
	onlyOn(t, p, d.nodesWithLabel(rackKey, "r2"), "pair")

	// Every device is taken now.
	d.createGang(gang{name: "big", constraint: required(rackKey), groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1", pod: ownClaim}}})
	reason := fmt.Sprintf(`DRA: the gang's ResourceClaims need 2 free devices of class %s (claims big-w-0-gpu, big-w-1-gpu), but the best rack (%s), "r1", offers 0`, d.class, rackKey)
	d.waitScheduledCondition("big", metav1.ConditionFalse, reason)
	d.eventually("an InsufficientDevices event", func() (bool, string) {
		events := d.gangEvents("big", common.EventReasonInsufficientDevices)
		if len(events) == 0 {
			return false, "no event"
		}
		return events[0].Note == reason, events[0].Note
	})
	assert.Equal(t, 2, d.placement("big").pending)
	for _, name := range []string{"big-w-0-gpu", "big-w-1-gpu"} {
		assert.Nil(t, d.getClaim(name).Status.Allocation, "nothing was allocated for %s", name)
	}

	// A node joins rack r1 and the gang is tried there before the node's devices are
	// published (as a DRA driver publishes them after its node registers): still no room. The
	// devices then make it fit, and their ResourceSlice alone must bring the gang back.
	failed := d.schedulingFailures()
	d.addNodes(rack("d", "8", "r1"))
	d.eventually("an attempt after the node joined", func() (bool, string) {
		now := d.schedulingFailures()
		return now > failed, fmt.Sprintf("%v failed attempts, %v before the node joined", now, failed)
	})
	d.publish("d", 2)
	p = d.waitBound("big", 2)
	assert.Equal(t, map[string]int{d.nodeName("d"): 2}, p.nodes)
}

// TestDRAGangWaitsForItsClaims: a gang one of whose members names a claim that does not exist
// yet is not attempted at all — no member holds a node at the barrier, no attempt fails — and
// it is scheduled as soon as the claim appears.
func TestDRAGangWaitsForItsClaims(t *testing.T) {
	d := newDRAEnv(t, envOptions{permitTimeout: 2 * time.Second})
	d.addNodes(node{name: "a", cpu: "8"})
	d.publish("a", 2)
	d.claim("late-w-0-gpu")
	d.createGang(gang{name: "late", groups: []group{{name: "w", min: 2, replicas: 2, cpu: "1", pod: ownClaim}}})

	d.eventually("both members held in the scheduling queue", func() (bool, string) {
		pods, summary := d.sched.SchedulingQueue.PendingPods()
		var ours []string
		for _, p := range pods {
			if p.Namespace == d.ns {
				ours = append(ours, p.Name)
			}
		}
		sort.Strings(ours)
		return strings.Join(ours, ",") == "late-w-0,late-w-1" && strings.HasPrefix(summary, "activeQ:0; backoffQ:0;"), fmt.Sprintf("%v %s", ours, summary)
	})
	d.claim("late-w-1-gpu")
	d.waitBound("late", 2)

	list, err := d.admin.EventsV1().Events(d.ns).List(d.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ev := range list.Items {
		assert.NotEqual(t, "FailedScheduling", ev.Reason, "no attempt failed: %s %s", ev.Regarding.Name, ev.Note)
		assert.NotEqual(t, common.EventReasonGangUnschedulable, ev.Reason, "no attempt failed: %s", ev.Note)
	}
}
