package dra

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// EventsToRegister lists the events that may let a gang this plugin held back go on.
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A claim the gang waits for was created; a deallocated or deleted claim frees devices.
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: p.claimChanged},
		// New or changed ResourceSlices, DeviceClasses or nodes may offer the devices.
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.isSchedulableAfterSliceChange},
		{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.isSchedulableAfterClassChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: p.isSchedulableAfterNodeChange},
	}, nil
}

// claimChanged requeues a gang member when a claim it or its gang waits for was created, or
// when a claim gave up its devices.
func (p *Plugin) claimChanged(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldClaim, newClaim, err := util.As[*resourcev1.ResourceClaim](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if gangcache.ClaimRoomChanged(oldClaim, newClaim) {
		p.roomChanged()
	}
	key, _, member := gangcache.GangKey(pod)
	if !member || len(pod.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip, nil
	}
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

// isSchedulableAfterSliceChange: a new ResourceSlice, or one whose devices, node or pool
// changed, may offer what the gang's unallocated claims need. A status- or metadata-only update
// offers nothing new.
func (p *Plugin) isSchedulableAfterSliceChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldSlice, newSlice, err := util.As[*resourcev1.ResourceSlice](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if !gangcache.SliceRoomChanged(oldSlice, newSlice) {
		logger.V(5).Info("ResourceSlice spec unchanged", "pod", klog.KObj(pod), "slice", klog.KObj(newSlice))
		return fwk.QueueSkip, nil
	}
	p.roomChanged()
	return p.needsDevices(pod), nil
}

// isSchedulableAfterClassChange: a new DeviceClass, or one whose selectors or config changed,
// may match devices the gang's claims need.
func (p *Plugin) isSchedulableAfterClassChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldClass, newClass, err := util.As[*resourcev1.DeviceClass](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if !gangcache.ClassRoomChanged(oldClass, newClass) {
		return fwk.QueueSkip, nil
	}
	p.roomChanged()
	return p.needsDevices(pod), nil
}

// isSchedulableAfterNodeChange: a new node may bring devices; a node whose labels changed may
// now lie in a domain the gang can use, or match a slice's node selector.
func (p *Plugin) isSchedulableAfterNodeChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if oldNode != nil && newNode != nil && equality.Semantic.DeepEqual(oldNode.Labels, newNode.Labels) {
		return fwk.QueueSkip, nil
	}
	if newNode != nil && gangcache.NodeRoomChanged(oldNode, newNode) {
		p.roomChanged()
	}
	return p.needsDevices(pod), nil
}

// needsDevices requeues a gang member whose gang has a claim still to be allocated: the pod's
// own claims, and those of its gang's pending members, as the plugin's PreFilter counts them.
// A claim that does not exist yet waits for its creation (claimChanged), not for devices; a
// claim generated from a template and not yet named counts as unallocated.
func (p *Plugin) needsDevices(pod *v1.Pod) fwk.QueueingHint {
	key, _, member := gangcache.GangKey(pod)
	if !member || len(pod.Spec.ResourceClaims) == 0 {
		return fwk.QueueSkip
	}
	if p.dra == nil || p.gangs == nil {
		return fwk.Queue
	}
	members := append([]*v1.Pod{pod}, p.gangs.Pending(key)...)
	for _, m := range members {
		if len(usedClaims(m)) < len(m.Spec.ResourceClaims) {
			return fwk.Queue
		}
		for _, name := range usedClaims(m) {
			if c, ok := p.claim(m.Namespace, name); ok && c.Status.Allocation == nil {
				return fwk.Queue
			}
		}
	}
	return fwk.QueueSkip
}

// roomChanged bumps the gang cache's room version from a hint: the gang cache's own informer
// handler sees the same event, but possibly after the hint requeued a member, which would then
// be tried against lessons (ruled-out domains) the event made stale and learn them again at the
// old version. Hints run under the scheduling queue's lock before any requeued pod is popped.
func (p *Plugin) roomChanged() {
	if p.gangs != nil {
		p.gangs.RoomChanged()
	}
}
