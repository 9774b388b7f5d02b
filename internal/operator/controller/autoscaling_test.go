package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// hpaSummary is what a test checks of an HPA: its target and bounds.
type hpaSummary struct {
	Kind, Target string
	Min, Max     int32
}

func (e *env) hpas(c require.TestingT) map[string]hpaSummary {
	list := &autoscalingv2.HorizontalPodAutoscalerList{}
	require.NoError(c, e.c.List(e.ctx, list, client.InNamespace(e.ns)))
	out := map[string]hpaSummary{}
	for _, h := range list.Items {
		out[h.Name] = hpaSummary{Kind: h.Spec.ScaleTargetRef.Kind, Target: h.Spec.ScaleTargetRef.Name,
			Min: ptr.Deref(h.Spec.MinReplicas, 0), Max: h.Spec.MaxReplicas}
	}
	return out
}

// TestHorizontalPodAutoscalers: each PodCliqueSet replica gets an HPA for its autoscaled
// standalone clique (targeting the PodClique) and its autoscaled scaling group (targeting the
// PodCliqueScalingGroup), with the configured bounds; changing or removing a config and
// scaling the PodCliqueSet in update or remove exactly the affected HPAs. Each target's /scale
// reports the pod selector the autoscaler needs, and writing /scale as the autoscaler does
// changes pods and PodGangs.
func TestHorizontalPodAutoscalers(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "hpa", 2)
	pcs.Spec.Template.Clique("router").Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 3}
	memory := []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("1Gi"))},
	}}}
	// minReplicas left out: it defaults to the group's template replicas (2).
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &corev1alpha1.AutoScalingConfig{MaxReplicas: 4, Metrics: memory}
	e.create(pcs)

	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, map[string]hpaSummary{
			"hpa-0-router":  {"PodClique", "hpa-0-router", 1, 3},
			"hpa-1-router":  {"PodClique", "hpa-1-router", 1, 3},
			"hpa-0-workers": {"PodCliqueScalingGroup", "hpa-0-workers", 2, 4},
			"hpa-1-workers": {"PodCliqueScalingGroup", "hpa-1-workers", 2, 4},
		}, e.hpas(c))
	})
	router := &autoscalingv2.HorizontalPodAutoscaler{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "hpa-0-router"}, router))
	assert.Equal(t, "grove.io/v1alpha1", router.Spec.ScaleTargetRef.APIVersion)
	if assert.Len(t, router.Spec.Metrics, 1) && assert.NotNil(t, router.Spec.Metrics[0].Resource) {
		assert.Equal(t, corev1.ResourceCPU, router.Spec.Metrics[0].Resource.Name, "the default metric")
		assert.Equal(t, ptr.To[int32](80), router.Spec.Metrics[0].Resource.Target.AverageUtilization)
	}
	workers := &autoscalingv2.HorizontalPodAutoscaler{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "hpa-1-workers"}, workers))
	if assert.Len(t, workers.Spec.Metrics, 1) && assert.NotNil(t, workers.Spec.Metrics[0].Resource) {
		assert.Equal(t, corev1.ResourceMemory, workers.Spec.Metrics[0].Resource.Name, "the configured metric")
	}

	// The autoscaler reads the pod selector from /scale and writes replicas there.
	for _, target := range []client.Object{
		&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "hpa-0-router"}},
		&corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "hpa-0-workers"}},
	} {
		e.eventually(func(c *assert.CollectT) {
			s := &autoscalingv1.Scale{}
			require.NoError(c, e.c.SubResource("scale").Get(e.ctx, target, s))
			assert.Contains(c, s.Status.Selector, "app.kubernetes.io/part-of=hpa", "%s", target.GetName())
		})
	}
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "hpa-0-router"}}, 3)
	e.scale(&corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "hpa-0-workers"}}, 3)
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, e.pods("hpa-0-router"), 3)
		assert.Len(c, refNames(e.podGang(c, "hpa-0").Spec.PodGroups[0]), 3, "the base gang lists every router pod")
		assert.Len(c, e.pods("hpa-0-workers-2-prefill"), 2)
		assert.Equal(c, []string{"hpa-0", "hpa-0-workers-0", "hpa-0-workers-1", "hpa-1", "hpa-1-workers-0"},
			e.names(&schedv1alpha1.PodGangList{}), "a scaled gang for the new group replica")
		assert.Len(c, e.pods("hpa-1-router"), 1, "the other replica is untouched")
	})

	// Removing the router's config removes its HPAs; changing the group's bounds updates them.
	e.update(pcs, func() {
		pcs.Spec.Template.Clique("router").Spec.ScaleConfig = nil
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig.MaxReplicas = 5
	})
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, map[string]hpaSummary{
			"hpa-0-workers": {"PodCliqueScalingGroup", "hpa-0-workers", 2, 5},
			"hpa-1-workers": {"PodCliqueScalingGroup", "hpa-1-workers", 2, 5},
		}, e.hpas(c))
	})
	// Scaling the PodCliqueSet in removes the HPAs of the removed replica.
	e.scale(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "hpa"}}, 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, map[string]hpaSummary{"hpa-0-workers": {"PodCliqueScalingGroup", "hpa-0-workers", 2, 5}}, e.hpas(c))
	})
	assert.Len(t, e.pods("hpa-0-router"), 3, "the PodClique keeps the replicas its /scale was given")
}
