package dra

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// EventsToRegister lists the events that may let a gang this plugin held back go on.
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A claim the gang waits for was created; a deallocated or deleted claim frees devices.
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: p.claimChanged},
		// New or changed ResourceSlices, DeviceClasses or nodes may offer the devices.
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.usesClaims},
		{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.usesClaims},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: p.usesClaims},
	}, nil
}

// claimChanged requeues a gang member when a claim it or its gang waits for was created, or
// when a claim gave up its devices.
func (p *Plugin) claimChanged(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	key, _, member := gangcache.GangKey(pod)
	if !member || len(pod.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
	oldClaim, _ := oldObj.(*resourcev1.ResourceClaim)
	newClaim, _ := newObj.(*resourcev1.ResourceClaim)
	switch {
	case oldClaim == nil && newClaim != nil:
		if newClaim.Namespace != pod.Namespace {
			return fwk.QueueSkip, nil
		}
		if p.gangUses(key, pod, newClaim.Name) {
			return fwk.Queue, nil
		}
		return fwk.QueueSkip, nil
	case oldClaim != nil && oldClaim.Status.Allocation != nil && (newClaim == nil || newClaim.Status.Allocation == nil):
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// gangUses reports whether the pod or a pending member of its gang names the claim.
func (p *Plugin) gangUses(key string, pod *v1.Pod, claim string) bool {
	uses := func(m *v1.Pod) bool {
		for _, n := range namedClaims(m) {
			if n == claim {
				return true
			}
		}
		return false
	}
	if uses(pod) {
		return true
	}
	if p.gangs == nil {
		return false
	}
	for _, m := range p.gangs.Pending(key) {
		if uses(m) {
			return true
		}
	}
	return false
}

// usesClaims requeues gang members that use claims.
func (p *Plugin) usesClaims(_ klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if _, _, member := gangcache.GangKey(pod); member && len(pod.Spec.ResourceClaims) > 0 {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
