package dra

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

func TestEventsToRegister(t *testing.T) {
	e := newTestPlugin(t)
	events, err := e.p.EventsToRegister(context.Background())
	require.NoError(t, err)
	var got []fwk.ClusterEvent
	for _, ev := range events {
		assert.NotNil(t, ev.QueueingHintFn, "every event has a hint: %v", ev.Event)
		got = append(got, ev.Event)
	}
	assert.Equal(t, []fwk.ClusterEvent{
		{Resource: fwk.ResourceClaim, ActionType: fwk.Add | fwk.Update | fwk.Delete},
		{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update},
		{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel},
	}, got)
}

func allocated(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
	c = c.DeepCopy()
	c.Status.Allocation = &resourcev1.AllocationResult{}
	return c
}

func TestClaimChanged(t *testing.T) {
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	cases := []struct {
		name     string
		pod      string // "member" (names c0; its gang-mate names c1), "noclaims" or "plain"
		old, new any
		want     fwk.QueueingHint
	}{
		{name: "its own claim was created", pod: "member", new: gpuClaim("c0", 1), want: fwk.Queue},
		{name: "a gang-mate's claim was created", pod: "member", new: gpuClaim("c1", 1), want: fwk.Queue},
		{name: "a claim nobody in the gang names was created", pod: "member", new: gpuClaim("other", 1), want: fwk.QueueSkip},
		{name: "a claim of that name in another namespace", pod: "member", new: func() any { c := gpuClaim("c0", 1); c.Namespace = "else"; return c }(), want: fwk.QueueSkip},
		{name: "a claim was deallocated", pod: "member", old: allocated(gpuClaim("other", 1)), new: gpuClaim("other", 1), want: fwk.Queue},
		{name: "an allocated claim was deleted", pod: "member", old: allocated(gpuClaim("other", 1)), want: fwk.Queue},
		{name: "final state unknown of an allocated claim", pod: "member", old: cache.DeletedFinalStateUnknown{Obj: allocated(gpuClaim("other", 1))}, want: fwk.Queue},
		{name: "an unallocated claim was deleted", pod: "member", old: gpuClaim("other", 1), want: fwk.QueueSkip},
		{name: "a claim was allocated", pod: "member", old: gpuClaim("other", 1), new: allocated(gpuClaim("other", 1)), want: fwk.QueueSkip},
		{name: "a member without claims", pod: "noclaims", new: gpuClaim("c0", 1), want: fwk.QueueSkip},
		{name: "a pod outside gangs", pod: "plain", new: gpuClaim("c0", 1), want: fwk.QueueSkip},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestPlugin(t)
			pods := e.addGang(t, "g", 2, "", 2, ownClaim)
			pod := pods[0]
			switch tc.pod {
			case "noclaims":
				pod = e.addGang(t, "h", 1, "", 1, noClaims)[0]
			case "plain":
				pod = plain
			}
			got, err := e.p.claimChanged(klog.Background(), pod, tc.old, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The slice, class and node hints requeue members of gangs with a claim still to allocate,
// and only for changes that may offer devices.
func TestDeviceOfferHints(t *testing.T) {
	slice := gpuSlice("n1", 2)
	moreDevices := gpuSlice("n1", 4)
	relabelled := slice.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuClass}}
	narrowed := class.DeepCopy()
	narrowed.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "true"}}}
	annotated := class.DeepCopy()
	annotated.Annotations = map[string]string{"a": "b"}
	n := node("n1", rackKey, "r1")
	moved := node("n1", rackKey, "r2")
	cases := []struct {
		name string
		hint func(p *Plugin) fwk.QueueingHintFn
		// claim: state of the member's claim c0 ("unallocated", "allocated" or "missing").
		claim    string
		pod      string // "member", "noclaims" or "plain"
		old, new any
		want     fwk.QueueingHint
	}{
		{name: "slice added", hint: sliceHint, claim: "unallocated", new: slice, want: fwk.Queue},
		{name: "slice with more devices", hint: sliceHint, claim: "unallocated", old: slice, new: moreDevices, want: fwk.Queue},
		{name: "slice metadata only", hint: sliceHint, claim: "unallocated", old: slice, new: relabelled, want: fwk.QueueSkip},
		{name: "slice added, claims all allocated", hint: sliceHint, claim: "allocated", new: slice, want: fwk.QueueSkip},
		{name: "slice added, the claim does not exist yet", hint: sliceHint, claim: "missing", new: slice, want: fwk.QueueSkip},
		{name: "slice added, a member without claims", hint: sliceHint, claim: "unallocated", pod: "noclaims", new: slice, want: fwk.QueueSkip},
		{name: "slice added, a pod outside gangs", hint: sliceHint, claim: "unallocated", pod: "plain", new: slice, want: fwk.QueueSkip},
		{name: "class added", hint: classHint, claim: "unallocated", new: class, want: fwk.Queue},
		{name: "class selectors changed", hint: classHint, claim: "unallocated", old: class, new: narrowed, want: fwk.Queue},
		{name: "class metadata only", hint: classHint, claim: "unallocated", old: class, new: annotated, want: fwk.QueueSkip},
		{name: "node added", hint: nodeHint, claim: "unallocated", new: n, want: fwk.Queue},
		{name: "node labels changed", hint: nodeHint, claim: "unallocated", old: n, new: moved, want: fwk.Queue},
		{name: "node labels unchanged", hint: nodeHint, claim: "unallocated", old: n, new: n.DeepCopy(), want: fwk.QueueSkip},
		{name: "node added, claims all allocated", hint: nodeHint, claim: "allocated", new: n, want: fwk.QueueSkip},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestPlugin(t)
			pods := e.addGang(t, "g", 1, "", 1, claims("c0"))
			switch tc.claim {
			case "unallocated":
				e.dra.addClaim(gpuClaim("c0", 1))
			case "allocated":
				e.dra.addClaim(allocated(gpuClaim("c0", 1)))
			}
			pod := pods[0]
			switch tc.pod {
			case "noclaims":
				pod = e.addGang(t, "h", 1, "", 1, noClaims)[0]
			case "plain":
				pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
			}
			got, err := tc.hint(e.p)(klog.Background(), pod, tc.old, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func sliceHint(p *Plugin) fwk.QueueingHintFn {
	return p.isSchedulableAfterSliceChange
}

func classHint(p *Plugin) fwk.QueueingHintFn {
	return p.isSchedulableAfterClassChange
}

func nodeHint(p *Plugin) fwk.QueueingHintFn {
	return p.isSchedulableAfterNodeChange
}

// A gang-mate's unallocated claim, or a claim generated from a template and not yet named,
// still needs devices.
func TestDeviceOfferHintsLookAtTheWholeGang(t *testing.T) {
	e := newTestPlugin(t)
	pods := e.addGang(t, "g", 2, "", 2, ownClaim)
	e.dra.addClaim(allocated(gpuClaim("c0", 1)))
	e.dra.addClaim(gpuClaim("c1", 1))
	got, err := e.p.isSchedulableAfterSliceChange(klog.Background(), pods[0], nil, gpuSlice("n1", 1))
	require.NoError(t, err)
	assert.Equal(t, fwk.Queue, got, "the gang-mate's claim c1 is unallocated")

	e.dra.addClaim(allocated(gpuClaim("c1", 1)))
	got, err = e.p.isSchedulableAfterSliceChange(klog.Background(), pods[0], nil, gpuSlice("n1", 1))
	require.NoError(t, err)
	assert.Equal(t, fwk.QueueSkip, got, "every claim of the gang is allocated")

	templated := pods[0].DeepCopy()
	templated.Spec.ResourceClaims = append(templated.Spec.ResourceClaims, v1.PodResourceClaim{Name: "t", ResourceClaimTemplateName: ptr.To("tmpl")})
	got, err = e.p.isSchedulableAfterSliceChange(klog.Background(), templated, nil, gpuSlice("n1", 1))
	require.NoError(t, err)
	assert.Equal(t, fwk.Queue, got, "the template's claim is not generated yet")
}

// A hint given an object of the wrong type requeues (an error counts as Queue) and says so.
func TestHintsRejectWrongObjects(t *testing.T) {
	e := newTestPlugin(t)
	pod := e.addGang(t, "g", 1, "", 1, claims("c0"))[0]
	for _, h := range []fwk.QueueingHintFn{
		e.p.claimChanged, e.p.isSchedulableAfterSliceChange, e.p.isSchedulableAfterClassChange, e.p.isSchedulableAfterNodeChange,
	} {
		_, err := h(klog.Background(), pod, nil, pod)
		assert.Error(t, err)
	}
}

// A hint that requeues members for new devices expires what attempts learned before it
// (ruled-out domains) first: a requeued member tried before the gang cache's own handler sees
// the event would otherwise learn the stale lesson again and wait for good (issue 39's DRA
// flake: a node joined, its devices were published a moment later, and the gang never looked
// at the node's rack again).
func TestDeviceOfferHintsChangeTheRoomFirst(t *testing.T) {
	slice := gpuSlice("n1", 2)
	relabelled := slice.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	cases := []struct {
		name     string
		hint     func(p *Plugin) fwk.QueueingHintFn
		old, new any
		want     bool
	}{
		{"slice added", sliceHint, nil, slice, true},
		{"slice metadata only", sliceHint, slice, relabelled, false},
		{"class added", classHint, nil, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuClass}}, true},
		{"node added", nodeHint, nil, node("n1", rackKey, "r1"), true},
		{"claim deallocated", func(p *Plugin) fwk.QueueingHintFn { return p.claimChanged }, allocated(gpuClaim("other", 1)), gpuClaim("other", 1), true},
		{"claim allocated", func(p *Plugin) fwk.QueueingHintFn { return p.claimChanged }, gpuClaim("other", 1), allocated(gpuClaim("other", 1)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestPlugin(t)
			pod := e.addGang(t, "g", 1, "", 1, claims("c0"))[0]
			e.dra.addClaim(gpuClaim("c0", 1))
			before := e.p.gangs.RoomVersion()
			_, err := tc.hint(e.p)(klog.Background(), pod, tc.old, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, e.p.gangs.RoomVersion() > before)
		})
	}
}
