package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/nodes"
)

// EventsToRegister lists the cluster events that may make a gang the plugin turned away fit.
// Membership and PodGang changes are not scheduler events here: the plugin watches them itself
// and activates the gang's pods (GangEvent) — a PodGang created or updated to list a pod, a
// quorum present, a base PodGang placed. Activation runs after the gang cache has the change,
// and PreEnqueue runs under the queue's lock, so a pod PreEnqueue turned away on the old state
// is in the queue's unschedulable set by the time Activate looks for it; a hint on a PodGang
// event of the scheduler's own informer could run before the cache has the change and leave
// the pod waiting.
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A deleted pod frees room a gang lacked.
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.isSchedulableAfterPodDeleted},
		// A new node, or one with more room, new labels or fewer taints, may hold the gang.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: p.isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterPodDeleted requeues a member when the deleted pod freed room on a node:
// not when it had none (it freed nothing), nor when it was a member of the same gang that still
// counted as holding its node (the gang now needs again what that member held; the gang cache
// tells the plugin about its own members, GangEvent). A member that was terminating counted for
// nothing since its deletion began (its replacements are the quorum): the room it frees is room
// they may be waiting for, as on a full cluster during a rolling update.
func (p *Plugin) isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	deleted, _, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	key, _, member := gangcache.GangKey(pod)
	if !member {
		return fwk.Queue, nil
	}
	if deleted == nil || deleted.Spec.NodeName == "" {
		logger.V(5).Info("deleted pod held no node", "pod", klog.KObj(pod))
		return fwk.QueueSkip, nil
	}
	// Before the member is requeued (gangcache.Cache.RoomChanged).
	p.gangs.RoomChanged()
	if other, _, ok := gangcache.GangKey(deleted); ok && other == key && deleted.DeletionTimestamp == nil {
		return fwk.QueueSkip, nil
	}
	return p.unlessBackingOff(pod, key), nil
}

// isSchedulableAfterNodeChange requeues a member when a node was added, or was updated so that
// some PodGroup of its gang may now use it, or may use it and it has more room.
func (p *Plugin) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newNode != nil && gangcache.NodeRoomChanged(oldNode, newNode) {
		// Before the member is requeued (gangcache.Cache.RoomChanged).
		p.gangs.RoomChanged()
	}
	key, _, member := gangcache.GangKey(pod)
	if !member {
		return fwk.Queue, nil
	}
	if oldNode != nil && !nodes.Opened(oldNode, newNode, p.gangs.NodeRules(key, pod)) {
		logger.V(5).Info("node update opens no room for the gang", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	return p.unlessBackingOff(pod, key), nil
}

// unlessBackingOff requeues a gang member unless its gang backs off (the back-off timer brings
// it back) or another member scouts for the gang (gangcache.SetScout).
func (p *Plugin) unlessBackingOff(pod *v1.Pod, key string) fwk.QueueingHint {
	if _, _, backingOff := p.ledger.BackingOff(key); backingOff || !p.gangs.Requeue(pod) {
		return fwk.QueueSkip
	}
	return fwk.Queue
}
