package preemption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	groveclient "github.com/ai-dynamo/grove/pkg/client"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"
)

// podAPI is what eviction asks of the framework and the API server (an interface so that what
// eviction undoes after a failure is tested without them).
type podAPI interface {
	// preemptWaiting rejects a pod waiting at a Permit barrier in memory; false when it does not wait.
	preemptWaiting(pod *v1.Pod, note string) bool
	patchStatus(ctx context.Context, pod *v1.Pod, newStatus *v1.PodStatus) error
	deletePod(ctx context.Context, pod *v1.Pod) error
	preempted(victim *v1.Pod, related runtime.Object, note string)
	// activate moves pods to the active queue.
	activate(pods map[string]*v1.Pod)
}

// handleAPI is podAPI through the scheduler's handle.
type handleAPI struct{ h fwk.Handle }

func (a handleAPI) preemptWaiting(pod *v1.Pod, note string) bool {
	if wp := a.h.GetWaitingPod(pod.UID); wp != nil {
		return wp.Preempt(Name, note)
	}
	return false
}

func (a handleAPI) patchStatus(ctx context.Context, pod *v1.Pod, newStatus *v1.PodStatus) error {
	return util.PatchPodStatus(ctx, a.h.ClientSet(), pod.Name, pod.Namespace, &pod.Status, newStatus)
}

func (a handleAPI) deletePod(ctx context.Context, pod *v1.Pod) error {
	return util.DeletePod(ctx, a.h.ClientSet(), pod)
}

func (a handleAPI) activate(pods map[string]*v1.Pod) { a.h.Activate(klog.Background(), pods) }

func (a handleAPI) preempted(victim *v1.Pod, related runtime.Object, note string) {
	a.h.EventRecorder().Eventf(victim, related, v1.EventTypeNormal, common.EventReasonPreempted, "Preempting", "%s on node %s", note, victim.Spec.NodeName)
}

// evictUnits evicts every pod of the victims, as kube-scheduler evicts a victim pod (a
// DisruptionTarget condition, then deletion), and says on each victim who preempted it. A unit
// goes whole or not at all: every one of its pods is marked before any is deleted, and a unit
// some pod of which could not be marked is left running, its marks taken back. A pod whose
// deletion fails was not evicted either: its mark is taken back too, so that nothing reports a
// disruption that did not happen.
func (p *Plugin) evictUnits(ctx context.Context, preemptor preemptorInfo, victims []Unit, unitPods [][]*v1.Pod) {
	logger := klog.FromContext(ctx)
	var related runtime.Object = preemptor.pod
	if preemptor.gang != nil {
		related = preemptor.gang
	}
	note := fmt.Sprintf("Preempted by %s (priority %d)", preemptor.what, preemptor.priority)
	// kept records pods that were not evicted after all: the preemptor stops waiting for them
	// and is tried again at once, as DefaultPreemption does after a failed eviction.
	var keptMu sync.Mutex
	var kept []*v1.Pod
	keep := func(pods ...*v1.Pod) {
		keptMu.Lock()
		defer keptMu.Unlock()
		kept = append(kept, pods...)
	}
	defer func() {
		if len(kept) > 0 {
			p.retryPreemptor(preemptor, kept)
		}
	}()
	for i, u := range victims {
		pods := unitPods[i]
		marked := make([]*v1.Pod, len(pods))
		errs := make([]error, len(pods))
		workqueue.ParallelizeUntil(ctx, evictWorkers, len(pods), func(j int) {
			marked[j], errs[j] = p.mark(ctx, pods[j], preemptor)
		})
		if err := errors.Join(errs...); err != nil {
			logger.Error(err, "Could not mark a preemption victim: its workload is not evicted", "victim", u.Key, "preemptor", preemptor.what)
			workqueue.ParallelizeUntil(ctx, evictWorkers, len(pods), func(j int) { p.unmark(ctx, marked[j], preemptor) })
			keep(pods...)
			continue
		}
		if u.Gang != "" {
			p.markGang(ctx, u.Gang, related, note)
		}
		workqueue.ParallelizeUntil(ctx, evictWorkers, len(pods), func(j int) {
			pod := marked[j]
			if pod == nil {
				return
			}
			if err := p.api.deletePod(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
				logger.Error(err, "Could not evict a preemption victim", "pod", klog.KObj(pod), "preemptor", preemptor.what)
				p.unmark(ctx, pod, preemptor)
				keep(pod)
				return
			}
			p.api.preempted(pod, related, note)
		})
	}
}

// retryPreemptor forgets victims that were not evicted and brings the preemptor's pods back to
// the active queue: waiting for pods that stay would hold it back until its wait expires.
func (p *Plugin) retryPreemptor(preemptor preemptorInfo, kept []*v1.Pod) {
	for _, pod := range kept {
		p.inflight.gone(preemptor.key, pod.UID)
	}
	pods := []*v1.Pod{preemptor.pod}
	if preemptor.gang != nil && p.gangs != nil {
		pods = p.gangs.Pending(preemptor.key)
	}
	m := make(map[string]*v1.Pod, len(pods))
	for _, pod := range pods {
		m[pod.Namespace+"/"+pod.Name] = pod
	}
	p.api.activate(m)
}

// evictWorkers is how many API calls eviction makes at once.
const evictWorkers = 16

// mark prepares one victim pod for eviction: a pod waiting at a Permit barrier is rejected in
// memory (nil: nothing to delete); a terminating one needs nothing (nil); any other gets the
// DisruptionTarget condition and is returned, as patched, for deletion.
func (p *Plugin) mark(ctx context.Context, victim *v1.Pod, preemptor preemptorInfo) (*v1.Pod, error) {
	if victim.DeletionTimestamp != nil || p.api.preemptWaiting(victim, fmt.Sprintf("preempted by %s", preemptor.what)) {
		return nil, nil
	}
	condition := &v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&victim.Status, victim.Generation, v1.DisruptionTarget),
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonPreemptionByScheduler,
		Message:            fmt.Sprintf("%s: preempting the whole gang to accommodate %s", victim.Spec.SchedulerName, preemptor.what),
	}
	newStatus := victim.Status.DeepCopy()
	if apipod.UpdatePodCondition(newStatus, condition) {
		if err := p.api.patchStatus(ctx, victim, newStatus); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
	}
	out := victim.DeepCopy()
	out.Status = *newStatus
	return out, nil
}

// unmark takes back the DisruptionTarget condition of a pod that was not evicted (nil: nothing
// to take back), as kube-controller-manager does for stale ones, only at once.
func (p *Plugin) unmark(ctx context.Context, pod *v1.Pod, preemptor preemptorInfo) {
	if pod == nil {
		return
	}
	condition := &v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&pod.Status, pod.Generation, v1.DisruptionTarget),
		Status:             v1.ConditionFalse,
		Message:            fmt.Sprintf("the preemption for %s did not evict the pod", preemptor.what),
	}
	newStatus := pod.Status.DeepCopy()
	if !apipod.UpdatePodCondition(newStatus, condition) {
		return
	}
	if err := p.api.patchStatus(ctx, pod, newStatus); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Could not take back the DisruptionTarget condition of a pod that was not evicted", "pod", klog.KObj(pod))
	}
}

// markGang tells, on the victim PodGang, who preempted it: an event and a DisruptionTarget
// condition, written by a field manager of its own so the Scheduled condition's writer keeps
// its fields.
func (p *Plugin) markGang(ctx context.Context, key string, related runtime.Object, note string) {
	namespace, name, _ := strings.Cut(key, "/")
	g, ok := p.gangs.Get(key)
	if !ok {
		return
	}
	p.handle.EventRecorder().Eventf(gangRef(namespace, name, g.PodGang.UID), related, v1.EventTypeNormal, common.EventReasonPreempted, "Preempting",
		"%s: every pod of the gang is evicted", note)
	cond := metav1.Condition{Type: v1alpha1.PodGangConditionDisruptionTarget, Status: metav1.ConditionTrue, Reason: common.ReasonPreempted,
		Message: note, ObservedGeneration: g.PodGang.Generation, LastTransitionTime: metav1.Now()}
	err := p.gangs.ApplyStatus(ctx, schedulerac.PodGang(name, namespace).
		WithStatus(schedulerac.PodGangStatus().WithConditions(groveclient.Condition(cond))), common.PreemptionFieldManager)
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Could not mark a preempted PodGang", "podGang", key)
	}
}
