package validation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestRollingUpdateValidation(t *testing.T) {
	budget := func(v intstr.IntOrString) *corev1alpha1.RollingUpdateConfiguration {
		return &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: &v}
	}
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		want   []fieldErr
	}{
		{"integer and percentage budgets with a deadline", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].RollingUpdate = budget(intstr.FromInt32(2))
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(intstr.FromString("25%"))
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
		}, nil},
		{"coherent is a strategy", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Type = corev1alpha1.CoherentStrategy
		}, nil},
		{"zero budget", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].RollingUpdate = budget(intstr.FromInt32(0))
		}, []fieldErr{"Invalid spec.template.cliques[0].rollingUpdate.maxUnavailable"}},
		{"percentage out of range or malformed", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].RollingUpdate = budget(intstr.FromString("0%"))
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(intstr.FromString("half"))
		}, []fieldErr{"Invalid spec.template.cliques[0].rollingUpdate.maxUnavailable",
			"Invalid spec.template.podCliqueScalingGroups[0].rollingUpdate.maxUnavailable"}},
		{"negative deadline", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].RollingUpdate.ProgressDeadline = &metav1.Duration{Duration: -time.Second}
		}, []fieldErr{"Invalid spec.template.cliques[0].rollingUpdate.progressDeadline"}},
		{"on a scaling group's member", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].RollingUpdate = budget(intstr.FromInt32(1))
		}, []fieldErr{"Forbidden spec.template.cliques[1].rollingUpdate"}},
		{"with OnDelete", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Type = corev1alpha1.OnDeleteStrategy
		}, []fieldErr{"Forbidden spec.template.cliques[0].rollingUpdate", "Forbidden spec.template.podCliqueScalingGroups[0].rollingUpdate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validPCS()
			tc.mutate(p)
			_, errs := ValidatePodCliqueSet(p)
			requireExactly(t, errs, tc.want...)
		})
	}
}

func TestRollingUpdateDefaults(t *testing.T) {
	p := validPCS()
	assert.Equal(t, intstr.FromInt32(1), *p.Spec.Template.Cliques[0].RollingUpdate.MaxUnavailable, "standalone clique")
	assert.Nil(t, p.Spec.Template.Cliques[1].RollingUpdate, "a group member is governed by its group")
	assert.Equal(t, intstr.FromInt32(1), *p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate.MaxUnavailable, "scaling group")

	onDelete := validPCS()
	onDelete.Spec.UpdateStrategy.Type = corev1alpha1.OnDeleteStrategy
	onDelete.Spec.Template.Cliques[0].RollingUpdate = nil
	onDelete.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = nil
	corev1alpha1.SetDefaultsPodCliqueSet(onDelete)
	assert.Nil(t, onDelete.Spec.Template.Cliques[0].RollingUpdate, "OnDelete adds no budget")
}

func TestResolveMaxUnavailable(t *testing.T) {
	pct := func(s string) *corev1alpha1.RollingUpdateConfiguration {
		v := intstr.FromString(s)
		return &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: &v}
	}
	assert.Equal(t, int32(1), corev1alpha1.ResolveMaxUnavailable(nil, 10), "default")
	assert.Equal(t, int32(2), corev1alpha1.ResolveMaxUnavailable(pct("25%"), 10), "rounded down")
	assert.Equal(t, int32(1), corev1alpha1.ResolveMaxUnavailable(pct("25%"), 3), "never 0")
	assert.Equal(t, int32(25), corev1alpha1.ResolveMaxUnavailable(pct("25%"), 100))
}
