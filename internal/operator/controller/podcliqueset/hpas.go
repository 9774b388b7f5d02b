package podcliqueset

import (
	"context"
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// DefaultTargetCPUUtilization is the metric of an autoscaler whose config names none: 80%
// average CPU utilisation of the target's pods.
const DefaultTargetCPUUtilization = int32(80)

// horizontalPodAutoscalers keeps one HorizontalPodAutoscaler per PodCliqueSet replica for each
// standalone clique with autoScalingConfig (scaling its PodClique) and each scaling group with
// scaleConfig (scaling its PodCliqueScalingGroup). The autoscaler writes the target's /scale,
// which the PodCliqueSet never overrides once the target exists.
type horizontalPodAutoscalers struct{ r *Reconciler }

func (*horizontalPodAutoscalers) Name() string { return "horizontalpodautoscaler" }

// autoscalerTarget is one HPA the PodCliqueSet should have.
type autoscalerTarget struct {
	replica int
	kind    string
	name    string
	// field is the PodCliqueSet field the target's (and the HPA's) name comes from.
	field string
	// config has defaults applied: minReplicas is set.
	config *corev1alpha1.AutoScalingConfig
}

func autoscalerTargets(pcs *corev1alpha1.PodCliqueSet) []autoscalerTarget {
	t := &pcs.Spec.Template
	var targets []autoscalerTarget
	for i := range int(pcs.Spec.Replicas) {
		for _, c := range t.Cliques {
			if c == nil || c.Spec.ScaleConfig == nil || t.ScalingGroupOf(c.Name) != nil {
				continue
			}
			targets = append(targets, autoscalerTarget{replica: i, kind: "PodClique", config: c.Spec.ScaleConfig,
				name: apicommon.StandalonePodCliqueName(pcs.Name, i, c.Name), field: cliqueField(pcs, c.Name)})
		}
		for gi := range t.PodCliqueScalingGroupConfigs {
			g := &t.PodCliqueScalingGroupConfigs[gi]
			if g.ScaleConfig == nil {
				continue
			}
			targets = append(targets, autoscalerTarget{replica: i, kind: "PodCliqueScalingGroup", config: g.ScaleConfig,
				name: apicommon.PodCliqueScalingGroupName(pcs.Name, i, g.Name), field: scalingGroupField(gi)})
		}
	}
	return targets
}

func (c *horizontalPodAutoscalers) Sync(ctx context.Context, st *state) error {
	owned, err := listOwned(ctx, c.r.Client, st.stored, &autoscalingv2.HorizontalPodAutoscalerList{}, apicommon.ComponentHPA)
	if err != nil {
		return err
	}
	targets := autoscalerTargets(st.pcs)
	wanted := map[string]bool{}
	for _, t := range targets {
		wanted[apicommon.HPAName(t.name)] = true
	}
	errs := []error{deleteUnwanted(ctx, c.r.Client, owned, wanted)}
	for _, t := range targets {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: apicommon.HPAName(t.name), Namespace: st.pcs.Namespace}}
		if _, err := common.CreateOrPatch(ctx, c.r.Client, child(st.stored, apicommon.ComponentHPA, t.field), hpa, func() error {
			hpa.Labels = common.WithLabels(hpa.Labels, common.ReplicaLabels(st.pcs.Name, apicommon.ComponentHPA, t.replica))
			// Only the fields Grove decides are set: the apiserver defaults spec.behavior, and
			// overwriting it would rewrite the object on every reconcile.
			hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{
				APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: t.kind, Name: t.name,
			}
			hpa.Spec.MinReplicas = ptr.To(ptr.Deref(t.config.MinReplicas, 1))
			hpa.Spec.MaxReplicas = t.config.MaxReplicas
			hpa.Spec.Metrics = autoscalerMetrics(t.config)
			return nil
		}); st.conflict(err) != nil {
			errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler %s: %w", hpa.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *horizontalPodAutoscalers) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &autoscalingv2.HorizontalPodAutoscalerList{}, apicommon.ComponentHPA)
}

// autoscalerMetrics are the config's metrics, or the default CPU utilisation target.
func autoscalerMetrics(a *corev1alpha1.AutoScalingConfig) []autoscalingv2.MetricSpec {
	if len(a.Metrics) > 0 {
		out := make([]autoscalingv2.MetricSpec, len(a.Metrics))
		for i := range a.Metrics {
			a.Metrics[i].DeepCopyInto(&out[i])
		}
		return out
	}
	return []autoscalingv2.MetricSpec{{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
			Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(DefaultTargetCPUUtilization),
		}},
	}}
}
