package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Durations read off status transitions. They are observed by the leader only (see
// TransitionObserver), so that two operator replicas do not count one update twice.
var (
	RollingUpdateSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "grove_operator_rolling_update_duration_seconds", Help: "Duration of finished PodCliqueSet updates (status.updateProgress start to end), by strategy (RollingRecreate, Coherent, OnDelete).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14)}, []string{"strategy"})
	StartupWaitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "grove_operator_startup_wait_duration_seconds", Help: "Time a pod's startup-waiter init container held its containers back until the cliques it depends on were ready.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)})
)

// TransitionObserver watches PodCliqueSets and pods through the manager's cache and observes
// the two durations above when their status says one just ended. It is a manager Runnable that
// runs on the leader only.
type TransitionObserver struct {
	Cache cache.Cache
}

// NeedLeaderElection makes only the leader observe.
func (TransitionObserver) NeedLeaderElection() bool { return true }

// Start registers the informer handlers and removes them when ctx ends.
func (o TransitionObserver) Start(ctx context.Context) error {
	pcsInformer, err := o.Cache.GetInformer(ctx, &corev1alpha1.PodCliqueSet{})
	if err != nil {
		return err
	}
	pcsReg, err := pcsInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		oldPCS, ok1 := oldObj.(*corev1alpha1.PodCliqueSet)
		newPCS, ok2 := newObj.(*corev1alpha1.PodCliqueSet)
		if ok1 && ok2 {
			if d, ended := RollingUpdateEnded(oldPCS, newPCS); ended {
				RollingUpdateSeconds.WithLabelValues(string(corev1alpha1.StrategyOf(newPCS))).Observe(d.Seconds())
			}
		}
	}})
	if err != nil {
		return err
	}
	podInformer, err := o.Cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	podReg, err := podInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		oldPod, ok1 := oldObj.(*corev1.Pod)
		newPod, ok2 := newObj.(*corev1.Pod)
		if ok1 && ok2 {
			if d, ended := StartupWaitEnded(oldPod, newPod); ended {
				StartupWaitSeconds.Observe(d.Seconds())
			}
		}
	}})
	if err != nil {
		return err
	}
	<-ctx.Done()
	_ = pcsInformer.RemoveEventHandler(pcsReg)
	_ = podInformer.RemoveEventHandler(podReg)
	return nil
}

// RollingUpdateEnded reports a rolling update that the new object shows finished and the old
// one did not, with its duration.
// An OnDelete update ends the moment it starts (the operator replaces nothing), so it is not
// a rolling update and is not reported.
func RollingUpdateEnded(oldPCS, newPCS *corev1alpha1.PodCliqueSet) (time.Duration, bool) {
	if s := newPCS.Spec.UpdateStrategy; s != nil && s.Type == corev1alpha1.OnDeleteStrategy {
		return 0, false
	}
	n := newPCS.Status.UpdateProgress
	if n == nil || n.UpdateEndedAt == nil || n.UpdateStartedAt.IsZero() {
		return 0, false
	}
	if o := oldPCS.Status.UpdateProgress; o != nil && o.UpdateEndedAt != nil && o.UpdateStartedAt.Equal(&n.UpdateStartedAt) {
		return 0, false // the same, already finished update
	}
	return max(0, n.UpdateEndedAt.Sub(n.UpdateStartedAt.Time)), true
}

// StartupWaitEnded reports a startup waiter that the new pod shows completed and the old one
// did not, with how long it ran.
func StartupWaitEnded(oldPod, newPod *corev1.Pod) (time.Duration, bool) {
	n := waiterTerminated(newPod)
	if n == nil || n.ExitCode != 0 || waiterTerminated(oldPod) != nil {
		return 0, false
	}
	if n.StartedAt.IsZero() || n.FinishedAt.IsZero() {
		return 0, false
	}
	return max(0, n.FinishedAt.Sub(n.StartedAt.Time)), true
}

func waiterTerminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for i := range p.Status.InitContainerStatuses {
		if s := &p.Status.InitContainerStatuses[i]; s.Name == apicommon.StartupWaiterContainerName {
			return s.State.Terminated
		}
	}
	return nil
}
