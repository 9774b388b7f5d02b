package gang

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// missingGangGrace is how long a pod may name a PodGang (or PodGroup) the scheduler does not
// know before it is told: the PodGang informer may simply be behind the pod's.
const missingGangGrace = 5 * time.Second

// missingGangReporter tells pods that name a PodGang, or a PodGroup of one, that does not
// exist why they wait. PreEnqueue keeps them out of the queue, and kube-scheduler writes no
// condition for that: without this they would sit Pending with nothing said. Each such pod
// gets a PodScheduled=False condition (its own reason, so that autoscalers do not take the
// pod for one that lacks capacity) and a warning event, at most once per eventInterval.
type missingGangReporter struct {
	ctx      context.Context
	pods     corelisters.PodLister
	recorder events.EventRecorder
	patch    func(ctx context.Context, namespace, name string, body []byte) error
	// stillMissing re-checks, when the grace ends, why the pod waits ("" when it no longer does).
	stillMissing func(pod *v1.Pod) (reason, message string)
	interval     time.Duration

	mu sync.Mutex
	// pending holds the pods whose grace is running; reported when each was last told.
	pending  map[types.UID]bool
	reported map[types.UID]time.Time
}

// newMissingGangReporter reports through the framework's clientset and event recorder.
func newMissingGangReporter(ctx context.Context, h fwk.Handle, stillMissing func(*v1.Pod) (string, string)) *missingGangReporter {
	pods := h.ClientSet().CoreV1()
	return &missingGangReporter{
		ctx: ctx, pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), recorder: h.EventRecorder(),
		stillMissing: stillMissing, interval: eventInterval,
		pending: map[types.UID]bool{}, reported: map[types.UID]time.Time{},
		patch: func(ctx context.Context, namespace, name string, body []byte) error {
			_, err := pods.Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
			return err
		},
	}
}

// observe notes that PreEnqueue turned the pod away for a missing PodGang or PodGroup; the pod
// is told after the grace, if it still waits for the same reason.
func (m *missingGangReporter) observe(pod *v1.Pod) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[pod.UID] || time.Since(m.reported[pod.UID]) < m.interval {
		return
	}
	m.pending[pod.UID] = true
	ns, name, uid := pod.Namespace, pod.Name, pod.UID
	time.AfterFunc(missingGangGrace, func() { m.report(ns, name, uid) })
}

// forget drops what is remembered of a pod whose gang exists.
func (m *missingGangReporter) forget(uid types.UID) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reported, uid)
}

func (m *missingGangReporter) report(namespace, name string, uid types.UID) {
	m.mu.Lock()
	delete(m.pending, uid)
	m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	pod, err := m.pods.Pods(namespace).Get(name)
	if err != nil || pod.UID != uid || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		m.forget(uid)
		return
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		return // its creator still holds it (Grove's operator gates pods until their PodGang lists them)
	}
	reason, message := m.stillMissing(pod)
	if reason == "" {
		return
	}
	m.mu.Lock()
	m.reported[uid] = time.Now()
	// Pods gone since their report are not remembered for ever.
	for u, at := range m.reported {
		if time.Since(at) > m.interval {
			delete(m.reported, u)
		}
	}
	m.mu.Unlock()
	if m.recorder != nil {
		m.recorder.Eventf(pod, nil, v1.EventTypeWarning, reason, "Scheduling", "%s", message)
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: metav1.Now(),
	}}}})
	if err != nil {
		return
	}
	if err := m.patch(m.ctx, namespace, name, body); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(m.ctx).V(2).Info("Failed to record why a pod waits", "pod", klog.KRef(namespace, name), "err", err)
	}
}

// missingGangReason says why a member's gang cannot be scheduled at all ("" when its PodGang
// and PodGroup exist).
func (p *Plugin) missingGangReason(pod *v1.Pod) (reason, message string) {
	key, group, ok := gangcache.GangKey(pod)
	if !ok {
		return "", ""
	}
	g, found := p.gangs.Get(key)
	if !found {
		return common.ReasonPodGangNotFound, "PodGang " + key + " does not exist (the pod's " + common.LabelPodGang +
			" label names it); the pod is not scheduled until it is created"
	}
	if _, ok := g.Quorum.Group(group); !ok {
		return common.ReasonPodGroupNotFound, "PodGang " + key + " has no PodGroup \"" + group + "\" (the pod's " + common.LabelPodClique +
			" label names it); the pod is not scheduled until the PodGang lists it"
	}
	return "", ""
}
