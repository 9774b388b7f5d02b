package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// EventsToRegister lists the cluster events that may make a gang the plugin turned away fit.
// Membership and PodGang changes are not scheduler events here: the plugin watches them itself
// and activates the gang's pods (onGangEvent).
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A deleted pod frees room a gang lacked.
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.unlessBackingOff},
		// A new node, or one with more room, new labels or fewer taints, may hold the gang.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: p.unlessBackingOff},
	}, nil
}

// unlessBackingOff requeues a gang member unless its gang backs off (the back-off timer brings
// it back) or another member scouts for the gang (gangcache.SetScout).
func (p *Plugin) unlessBackingOff(_ klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	key, _, ok := gangcache.GangKey(pod)
	if !ok {
		return fwk.Queue, nil
	}
	if _, _, backingOff := p.ledger.BackingOff(key); backingOff || !p.gangs.Requeue(pod) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
