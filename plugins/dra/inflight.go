package dra

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Gang members that share a claim nobody has allocated yet.
//
// DynamicResources allocates a claim in the Reserve of the first pod that uses it and keeps
// the allocation "in flight" until that pod's PreBind writes it to the claim's status. Any
// other pod that uses the claim meanwhile is turned away ("resource claim ... is in the
// process of being allocated"). Gang members wait at the Permit barrier between Reserve and
// PreBind, so a second member sharing the claim could never reach the barrier: the gang
// deadlocked until the Permit timeout, attempt after attempt.
//
// So, once a gang member's Reserve has allocated a named claim, the plugin shows the claim as
// allocated in the scheduler's claim cache (not in the API): the other members then fit on the
// nodes of its devices and reach the barrier. They hold at Permit until the allocating member
// has been bound — its PreBind is what writes the allocation — and are rejected if it loses
// its node, when the claim shows as unallocated again.

// inFlightWait bounds how long a member waits at Permit for another member's allocation to be
// written; the allocating member is bound or unreserved long before.
const inFlightWait = 5 * time.Minute

// inFlight is a named claim a pod allocated in Reserve, and the pods that wait for it.
type inFlight struct {
	namespace, name string
	allocator       types.UID
	waiting         sets.Set[types.UID]
}

var (
	_ fwk.ReservePlugin  = &Plugin{}
	_ fwk.PermitPlugin   = &Plugin{}
	_ fwk.PostBindPlugin = &Plugin{}
)

// Reserve runs after DynamicResources' Reserve: for each named claim this pod has just
// allocated (an allocation in flight for a claim the cache shows unallocated), it shows the
// claim as allocated in the cache.
func (p *Plugin) Reserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if p.dra == nil {
		return nil
	}
	claims := p.dra.ResourceClaims()
	for _, name := range namedClaims(pod) {
		claim, ok := p.claim(pod.Namespace, name)
		if !ok || claim.Status.Allocation != nil {
			continue
		}
		allocation := claims.GetPendingAllocation(claim.UID)
		if allocation == nil {
			continue
		}
		assumed := claim.DeepCopy()
		assumed.Status.Allocation = allocation.DeepCopy()
		if err := claims.AssumeClaimAfterAPICall(assumed); err != nil {
			klog.FromContext(ctx).V(4).Info("could not show the claim allocated", "claim", klog.KObj(claim), "err", err)
			continue
		}
		p.mu.Lock()
		p.inFlight[claim.UID] = &inFlight{namespace: claim.Namespace, name: claim.Name, allocator: pod.UID, waiting: sets.New[types.UID]()}
		p.mu.Unlock()
	}
	return nil
}

// Unreserve: a pod that allocated claims lost its node, so the allocations are void. The cache
// shows the claims as the API has them again, and the pods that waited for them are rejected.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	for _, f := range p.endFlights(pod.UID) {
		p.dra.ResourceClaims().AssumedClaimRestore(f.namespace, f.name)
		msg := fmt.Sprintf("pod %s, which allocated ResourceClaim %s, lost its node", pod.Name, f.name)
		for uid := range f.waiting {
			if wp := p.handle.GetWaitingPod(uid); wp != nil {
				wp.Reject(Name, msg)
			}
		}
	}
}

// Permit holds a pod that uses a claim another pod allocated until that pod is bound.
func (p *Plugin) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	if p.dra == nil {
		return nil, 0
	}
	var waitFor []string
	for _, name := range namedClaims(pod) {
		claim, ok := p.claim(pod.Namespace, name)
		if !ok {
			continue
		}
		p.mu.Lock()
		if f := p.inFlight[claim.UID]; f != nil && f.allocator != pod.UID {
			f.waiting.Insert(pod.UID)
			waitFor = append(waitFor, name)
		}
		p.mu.Unlock()
	}
	if len(waitFor) == 0 {
		return nil, 0
	}
	return fwk.NewStatus(fwk.Wait, fmt.Sprintf("waiting for the allocation of ResourceClaims %v to be written", waitFor)), inFlightWait
}

// PostBind: the pod's PreBind wrote the allocations it made; the pods waiting for them go on.
func (p *Plugin) PostBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	var waiting []types.UID
	for _, f := range p.endFlights(pod.UID) {
		waiting = append(waiting, f.waiting.UnsortedList()...)
	}
	if len(waiting) > 0 {
		go p.allow(waiting)
	}
}

// allow lets the pods go on. A pod registers with the plugin in Permit just before the
// scheduler lists it as waiting, so one not listed yet is tried again for a while.
func (p *Plugin) allow(uids []types.UID) {
	deadline := time.Now().Add(10 * time.Second)
	for len(uids) > 0 && time.Now().Before(deadline) {
		var later []types.UID
		for _, uid := range uids {
			if wp := p.handle.GetWaitingPod(uid); wp != nil {
				wp.Allow(Name)
			} else {
				later = append(later, uid)
			}
		}
		uids = later
		if len(uids) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// endFlights forgets the claims the pod allocated and returns them.
func (p *Plugin) endFlights(allocator types.UID) []*inFlight {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*inFlight
	for uid, f := range p.inFlight {
		if f.allocator == allocator {
			out = append(out, f)
			delete(p.inFlight, uid)
		}
	}
	return out
}
