package topology

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestEventsToRegister(t *testing.T) {
	p := newTestPlugin(t, 50)
	events, err := p.EventsToRegister(context.Background())
	require.NoError(t, err)
	var got []fwk.ClusterEvent
	for _, e := range events {
		assert.NotNil(t, e.QueueingHintFn, "every event has a hint: %v", e.Event)
		got = append(got, e.Event)
	}
	assert.Equal(t, []fwk.ClusterEvent{
		{Resource: fwk.AssignedPod, ActionType: fwk.Delete},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint},
		{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update},
		{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update},
		{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete},
	}, got)
}

// The plugin turns gangs away for devices (DeviceAdvice), so device changes that may open a
// domain requeue its members; a claim change frees a device only when the claim gives its
// allocation back.
func TestIsSchedulableAfterDeviceChanges(t *testing.T) {
	allocated := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	unallocated := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	cases := []struct {
		name     string
		pod      string // "member" or "plain"
		scoutNot bool
		hint     string // "device" or "claim"
		old, new any
		want     fwk.QueueingHint
	}{
		{name: "devices published", pod: "member", hint: "device", new: slice, want: fwk.Queue},
		{name: "devices changed", pod: "member", hint: "device", old: slice, new: slice, want: fwk.Queue},
		{name: "devices of pods outside gangs are not this plugin's", pod: "plain", hint: "device", new: slice, want: fwk.QueueSkip},
		{name: "another member scouts for the gang", pod: "member", scoutNot: true, hint: "device", new: slice, want: fwk.QueueSkip},
		{name: "a claim gave its allocation back", pod: "member", hint: "claim", old: allocated, new: unallocated, want: fwk.Queue},
		{name: "an allocated claim was deleted", pod: "member", hint: "claim", old: allocated, want: fwk.Queue},
		{name: "an allocated claim was deleted, final state unknown", pod: "member", hint: "claim", old: cache.DeletedFinalStateUnknown{Obj: allocated}, want: fwk.Queue},
		{name: "a claim was allocated", pod: "member", hint: "claim", old: unallocated, new: allocated, want: fwk.QueueSkip},
		{name: "an allocated claim changed otherwise", pod: "member", hint: "claim", old: allocated, new: allocated, want: fwk.QueueSkip},
		{name: "an unallocated claim was deleted", pod: "member", hint: "claim", old: unallocated, want: fwk.QueueSkip},
		{name: "claims of pods outside gangs are not this plugin's", pod: "plain", hint: "claim", old: allocated, new: unallocated, want: fwk.QueueSkip},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, 50)
			pods := addGang(p, "g", gangSpec(2, rackKey, ""), 2, "1")
			pod := pods[0]
			if tc.pod == "plain" {
				pod = member("plain", "", "1")
			}
			if tc.scoutNot {
				p.gangs.SetScout("ns/g", pods[1].UID)
			}
			hint := p.isSchedulableAfterDeviceChange
			if tc.hint == "claim" {
				hint = p.isSchedulableAfterClaimReleased
			}
			got, err := hint(klog.Background(), pod, tc.old, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	base := testNode("n", "8", rackKey, "r1")
	with := func(change func(n *v1.Node)) *v1.Node {
		n := base.DeepCopy()
		change(n)
		return n
	}
	tainted := with(func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "gpu", Value: "x", Effect: v1.TaintEffectNoSchedule}}
	})
	cases := []struct {
		name     string
		pod      string // "member", "plain", "unknown" (its PodGang is unknown) or "selective" (selects pool=a)
		scoutNot bool   // another member scouts for the gang
		old, new any
		want     fwk.QueueingHint
	}{
		{name: "node added", pod: "member", new: base, want: fwk.Queue},
		{name: "pods outside gangs are not this plugin's", pod: "plain", new: base, want: fwk.QueueSkip},
		{name: "more allocatable", pod: "member", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("16") }), want: fwk.Queue},
		{name: "new allocatable resource", pod: "member", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable["example.com/gpu"] = resource.MustParse("1") }), want: fwk.Queue},
		{name: "less allocatable", pod: "member", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("4") }), want: fwk.QueueSkip},
		{name: "a label no rule or domain uses", pod: "member", old: base, new: with(func(n *v1.Node) { n.Labels["team"] = "x" }), want: fwk.QueueSkip},
		{name: "the rack label changed", pod: "member", old: base, new: with(func(n *v1.Node) { n.Labels[rackKey] = "r2" }), want: fwk.Queue},
		{name: "the rack label was removed", pod: "member", old: base, new: with(func(n *v1.Node) { delete(n.Labels, rackKey) }), want: fwk.Queue},
		{name: "a zone label the gang does not pack by", pod: "member", old: base, new: with(func(n *v1.Node) { n.Labels[zoneKey] = "z" }), want: fwk.QueueSkip},
		{name: "taint removed", pod: "member", old: tainted, new: base, want: fwk.Queue},
		{name: "taint added", pod: "member", old: base, new: tainted, want: fwk.QueueSkip},
		{name: "uncordoned", pod: "member", old: with(func(n *v1.Node) { n.Spec.Unschedulable = true }), new: base, want: fwk.Queue},
		{name: "gained the label a member selects", pod: "selective", old: base, new: with(func(n *v1.Node) { n.Labels["pool"] = "a" }), want: fwk.Queue},
		{name: "more room on a node members may not use", pod: "selective", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("16") }), want: fwk.QueueSkip},
		{name: "another member scouts for the gang", pod: "member", scoutNot: true, new: base, want: fwk.QueueSkip},
		{name: "unknown gang: any label may be a pack key", pod: "unknown", old: base, new: with(func(n *v1.Node) { n.Labels["team"] = "x" }), want: fwk.Queue},
		{name: "unknown gang: less allocatable", pod: "unknown", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("4") }), want: fwk.QueueSkip},
		{name: "a deleted-final-state old object", pod: "member", old: cache.DeletedFinalStateUnknown{Obj: tainted}, new: base, want: fwk.Queue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, 50)
			var change []func(*v1.Pod)
			if tc.pod == "selective" {
				change = append(change, func(m *v1.Pod) { m.Spec.NodeSelector = map[string]string{"pool": "a"} })
			}
			pods := addGang(p, "g", gangSpec(2, rackKey, ""), 2, "1", change...)
			pod := pods[0]
			switch tc.pod {
			case "plain":
				pod = member("plain", "", "1")
			case "unknown":
				pod = member("u-0", "unknown", "1")
			}
			if tc.scoutNot {
				p.gangs.SetScout("ns/g", pods[1].UID)
			}
			got, err := p.isSchedulableAfterNodeChange(klog.Background(), pod, tc.old, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	bound := func(pod *v1.Pod) *v1.Pod {
		pod = pod.DeepCopy()
		pod.Spec.NodeName = "n"
		return pod
	}
	cases := []struct {
		name     string
		plain    bool
		scoutNot bool
		deleted  func(gang []*v1.Pod) any
		want     fwk.QueueingHint
	}{
		{name: "a pod outside gangs freed room", deleted: func([]*v1.Pod) any { return bound(member("x", "", "1")) }, want: fwk.Queue},
		{name: "a member of another gang freed room", deleted: func([]*v1.Pod) any { return bound(member("o-0", "other", "1")) }, want: fwk.Queue},
		{name: "a member of the same gang freed room and its pin", deleted: func(g []*v1.Pod) any { return bound(g[1]) }, want: fwk.Queue},
		{name: "a pod without a node freed nothing", deleted: func([]*v1.Pod) any { return member("x", "", "1") }, want: fwk.QueueSkip},
		{name: "pods outside gangs are not this plugin's", plain: true, deleted: func([]*v1.Pod) any { return bound(member("x", "", "1")) }, want: fwk.QueueSkip},
		{name: "another member scouts for the gang", scoutNot: true, deleted: func([]*v1.Pod) any { return bound(member("x", "", "1")) }, want: fwk.QueueSkip},
		{name: "final state unknown", deleted: func([]*v1.Pod) any { return cache.DeletedFinalStateUnknown{Obj: bound(member("x", "", "1"))} }, want: fwk.Queue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, 50)
			pods := addGang(p, "g", gangSpec(2, rackKey, ""), 2, "1")
			pod := pods[0]
			if tc.plain {
				pod = member("plain", "", "1")
			}
			if tc.scoutNot {
				p.gangs.SetScout("ns/g", pods[1].UID)
			}
			got, err := p.isSchedulableAfterPodDeleted(klog.Background(), pod, tc.deleted(pods), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A hint given an object of the wrong type requeues (an error counts as Queue) and says so.
func TestHintsRejectWrongObjects(t *testing.T) {
	p := newTestPlugin(t, 50)
	pod := addGang(p, "g", gangSpec(1, rackKey, ""), 1, "1")[0]
	_, err := p.isSchedulableAfterNodeChange(klog.Background(), pod, nil, pod)
	assert.Error(t, err)
	_, err = p.isSchedulableAfterPodDeleted(klog.Background(), pod, testNode("n", "1"), nil)
	assert.Error(t, err)
	_, err = p.isSchedulableAfterClaimReleased(klog.Background(), pod, pod, nil)
	assert.Error(t, err)
}
