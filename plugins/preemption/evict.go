package preemption

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// evictUnits evicts every pod of the victims, as kube-scheduler evicts a victim pod (a
// DisruptionTarget condition, then deletion), and says on each victim who preempted it.
func (p *Plugin) evictUnits(ctx context.Context, preemptor preemptorInfo, victims []Unit, unitPods [][]*v1.Pod) {
	logger := klog.FromContext(ctx)
	var related runtime.Object = preemptor.pod
	if preemptor.gang != nil {
		related = preemptor.gang
	}
	note := fmt.Sprintf("Preempted by %s (priority %d)", preemptor.what, preemptor.priority)
	var wg sync.WaitGroup
	work := make(chan *v1.Pod)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pod := range work {
				if err := p.evictPod(ctx, pod, preemptor, note); err != nil {
					logger.Error(err, "Could not evict a preemption victim", "pod", klog.KObj(pod), "preemptor", preemptor.what)
				}
			}
		}()
	}
	for i, u := range victims {
		if u.Gang != "" {
			p.markGang(ctx, u.Gang, related, note)
		}
		for _, pod := range unitPods[i] {
			work <- pod
		}
	}
	close(work)
	wg.Wait()
}

func (p *Plugin) evictPod(ctx context.Context, victim *v1.Pod, preemptor preemptorInfo, note string) error {
	if victim.DeletionTimestamp != nil {
		return nil
	}
	if wp := p.handle.GetWaitingPod(victim.UID); wp != nil {
		wp.Preempt(Name, note)
		return nil
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
		if err := util.PatchPodStatus(ctx, p.handle.ClientSet(), victim.Name, victim.Namespace, &victim.Status, newStatus); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	if err := util.DeletePod(ctx, p.handle.ClientSet(), victim); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var related runtime.Object = preemptor.pod
	if preemptor.gang != nil {
		related = preemptor.gang
	}
	p.handle.EventRecorder().Eventf(victim, related, v1.EventTypeNormal, common.EventReasonPreempted, "Preempting", "%s on node %s", note, victim.Spec.NodeName)
	return nil
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
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(),
		"kind":       "PodGang",
		"metadata":   map[string]string{"name": name, "namespace": namespace},
		"status":     map[string]any{"conditions": []metav1.Condition{cond}},
	})
	if err != nil {
		return
	}
	err = p.gangs.Client.Patch(types.ApplyPatchType).Namespace(namespace).Resource("podgangs").Name(name).
		SubResource("status").Param("fieldManager", common.PreemptionFieldManager).Param("force", "true").
		Body(body).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Could not mark a preempted PodGang", "podGang", key)
	}
}
