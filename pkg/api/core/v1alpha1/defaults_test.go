package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSetDefaultsPodCliqueSetFillsWhatIsUnset(t *testing.T) {
	pcs := &PodCliqueSet{Spec: PodCliqueSetSpec{Template: PodCliqueSetTemplateSpec{
		Cliques: []*PodCliqueTemplateSpec{
			{Name: "unset"},
			{Name: "scaled", Spec: PodCliqueSpec{Replicas: 3, ScaleConfig: &AutoScalingConfig{MaxReplicas: 6}}},
			nil,
		},
		PodCliqueScalingGroupConfigs: []PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"unset"}, ScaleConfig: &AutoScalingConfig{MaxReplicas: 4}}},
	}}}
	SetDefaultsPodCliqueSet(pcs)

	tpl := pcs.Spec.Template
	assert.Equal(t, RollingRecreateStrategy, pcs.Spec.UpdateStrategy.Type)
	assert.Equal(t, CliqueStartupTypeAnyOrder, *tpl.StartupType)
	assert.Equal(t, 4*time.Hour, tpl.TerminationDelay.Duration)
	assert.Equal(t, &HeadlessServiceConfig{PublishNotReadyAddresses: true}, tpl.HeadlessServiceConfig)

	unset := tpl.Cliques[0].Spec
	assert.EqualValues(t, 0, unset.Replicas, "0 is not turned into 1: validation refuses it")
	assert.Nil(t, unset.MinAvailable, "no minAvailable is derived from replicas 0")
	assert.Equal(t, "unset", unset.RoleName)
	assert.Equal(t, corev1.RestartPolicyAlways, unset.PodSpec.RestartPolicy)
	assert.EqualValues(t, 30, *unset.PodSpec.TerminationGracePeriodSeconds)

	scaled := tpl.Cliques[1].Spec
	assert.EqualValues(t, 3, *scaled.MinAvailable, "minAvailable defaults to replicas")
	assert.EqualValues(t, 3, *scaled.ScaleConfig.MinReplicas, "autoscaler minReplicas defaults to replicas")
	assert.Nil(t, tpl.Cliques[2])

	g := tpl.PodCliqueScalingGroupConfigs[0]
	assert.EqualValues(t, 1, *g.Replicas)
	assert.EqualValues(t, 1, *g.MinAvailable)
	assert.EqualValues(t, 1, *g.ScaleConfig.MinReplicas)
}

func TestSetDefaultsPodCliqueSetKeepsExplicitValuesAndIsIdempotent(t *testing.T) {
	pcs := &PodCliqueSet{Spec: PodCliqueSetSpec{
		UpdateStrategy: &PodCliqueSetUpdateStrategy{Type: OnDeleteStrategy},
		Template: PodCliqueSetTemplateSpec{
			StartupType:           ptr.To(CliqueStartupTypeExplicit),
			TerminationDelay:      &metav1.Duration{Duration: time.Minute},
			HeadlessServiceConfig: &HeadlessServiceConfig{PublishNotReadyAddresses: false},
			Cliques: []*PodCliqueTemplateSpec{{Name: "a", Spec: PodCliqueSpec{
				RoleName: "leader", Replicas: 4, MinAvailable: ptr.To[int32](2),
				ScaleConfig: &AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 8},
				PodSpec:     corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](5)},
			}}},
			PodCliqueScalingGroupConfigs: []PodCliqueScalingGroupConfig{{Name: "g", Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](2)}},
		},
	}}
	want := pcs.DeepCopy()
	SetDefaultsPodCliqueSet(pcs)
	assert.Equal(t, want, pcs)
	SetDefaultsPodCliqueSet(pcs)
	assert.Equal(t, want, pcs)
}
