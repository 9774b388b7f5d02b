package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// EventsToRegister lists the cluster events that may give a gang a domain.
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A deleted pod frees room in its domain.
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.gangMembersOnly},
		// A new node, or one that gained room, labels or lost taints, may complete a domain.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: p.gangMembersOnly},
	}, nil
}

// gangMembersOnly requeues members (the only pods this plugin rejects), unless another member
// scouts for the gang (gangcache.SetScout).
func (p *Plugin) gangMembersOnly(_ klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if _, _, ok := gangcache.GangKey(pod); ok && p.gangs.Requeue(pod) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
