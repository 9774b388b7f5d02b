package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// EventsToRegister lists the cluster events that may give a gang a domain.
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A deleted pod frees room in its domain.
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.isSchedulableAfterPodDeleted},
		// A new node, or one that gained room, labels or lost taints, may complete a domain.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: p.isSchedulableAfterNodeChange},
		// This plugin also rules out domains without the gang's devices (DeviceAdvice): new or
		// changed devices, a device class, or a claim giving its device back may open one. Without
		// these, a gang turned away for devices before its node's ResourceSlice was published
		// waited for the next node or pod event, or minutes for the queue's flush.
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.isSchedulableAfterDeviceChange},
		{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.isSchedulableAfterDeviceChange},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: p.isSchedulableAfterClaimReleased},
	}, nil
}

// isSchedulableAfterDeviceChange requeues a member when devices or device classes were added
// or changed: the domains that offer its gang's devices may have grown. The advice is for the
// whole gang, so a member without claims of its own counts too.
func (p *Plugin) isSchedulableAfterDeviceChange(_ klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if _, _, ok := gangcache.GangKey(pod); !ok {
		return fwk.QueueSkip, nil
	}
	return p.unlessScouted(pod), nil
}

// isSchedulableAfterClaimReleased requeues a member when a claim lost its allocation or was
// deleted allocated: its devices are free again. Other claim changes free no device.
func (p *Plugin) isSchedulableAfterClaimReleased(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldClaim, newClaim, err := util.As[*resourceapi.ResourceClaim](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if _, _, ok := gangcache.GangKey(pod); !ok {
		return fwk.QueueSkip, nil
	}
	if oldClaim == nil || oldClaim.Status.Allocation == nil || newClaim != nil && newClaim.Status.Allocation != nil {
		return fwk.QueueSkip, nil
	}
	return p.unlessScouted(pod), nil
}

// isSchedulableAfterPodDeleted requeues a member (the only pods this plugin rejects) when the
// deleted pod held a node. A member of the same gang counts too: besides room, it may have
// pinned the gang to a domain that has none.
func (p *Plugin) isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	deleted, _, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if _, _, ok := gangcache.GangKey(pod); !ok {
		return fwk.QueueSkip, nil
	}
	if deleted == nil || deleted.Spec.NodeName == "" {
		logger.V(5).Info("deleted pod held no node", "pod", klog.KObj(pod))
		return fwk.QueueSkip, nil
	}
	// Before the member is requeued (gangcache.Cache.RoomChanged).
	p.gangs.RoomChanged()
	return p.unlessScouted(pod), nil
}

// isSchedulableAfterNodeChange requeues a member when a node was added, when an update lets a
// PodGroup of its gang use the node or gives it more room there (nodes.Opened), or when a
// node-label key the gang packs or spreads by changed (domains gain or lose nodes, pins move).
func (p *Plugin) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newNode != nil && gangcache.NodeRoomChanged(oldNode, newNode) {
		// Before the member is requeued (gangcache.Cache.RoomChanged).
		p.gangs.RoomChanged()
	}
	key, _, ok := gangcache.GangKey(pod)
	if !ok {
		return fwk.QueueSkip, nil
	}
	if oldNode != nil && !p.domainKeyChanged(key, oldNode, newNode) && !nodes.Opened(oldNode, newNode, p.gangs.NodeRules(key, pod)) {
		logger.V(5).Info("node update changes no domain of the gang", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	return p.unlessScouted(pod), nil
}

// unlessScouted requeues the member unless another member scouts for the gang
// (gangcache.SetScout).
func (p *Plugin) unlessScouted(pod *v1.Pod) fwk.QueueingHint {
	if p.gangs.Requeue(pod) {
		return fwk.Queue
	}
	return fwk.QueueSkip
}

// domainKeyChanged reports whether the node's value of a key the gang packs by changed. An
// unknown gang counts every key as changed.
func (p *Plugin) domainKeyChanged(key string, oldNode, newNode *v1.Node) bool {
	if equality.Semantic.DeepEqual(oldNode.Labels, newNode.Labels) {
		return false
	}
	g, ok := p.gangs.Get(key)
	if !ok {
		return true
	}
	var changed func(s *placement.Set) bool
	changed = func(s *placement.Set) bool {
		for _, k := range []string{s.Required, s.Preferred} {
			if k == "" {
				continue
			}
			was, had := oldNode.Labels[k]
			is, has := newNode.Labels[k]
			if was != is || had != has {
				return true
			}
		}
		for _, c := range s.Children {
			if changed(c) {
				return true
			}
		}
		return false
	}
	return changed(placement.NewTree(&g.PodGang.Spec).Root) || spreadKeyChanged(g.PodGang, oldNode, newNode) || sliceKeyChanged(g.PodGang, oldNode, newNode)
}
