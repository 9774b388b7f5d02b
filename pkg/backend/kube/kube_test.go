package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/backend"
)

func TestPreparePodSetsDefaultScheduler(t *testing.T) {
	pod := &corev1.Pod{}
	New().PreparePod(pod, backend.PodGangRef{Name: "p-0", PodGroup: "p-0-a"})
	assert.Equal(t, "default-scheduler", pod.Spec.SchedulerName)
}

func TestValidatePodCliqueSetRejectsEveryTopologyConstraint(t *testing.T) {
	rack := &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack"}
	cases := []struct {
		name       string
		mutate     func(*corev1alpha1.PodCliqueSetTemplateSpec)
		wantFields []string
	}{
		{"no constraint", func(*corev1alpha1.PodCliqueSetTemplateSpec) {}, nil},
		{"PodCliqueSet level", func(t *corev1alpha1.PodCliqueSetTemplateSpec) { t.TopologyConstraint = rack }, []string{"spec.template.topologyConstraint"}},
		{"scaling group and clique", func(t *corev1alpha1.PodCliqueSetTemplateSpec) {
			t.PodCliqueScalingGroupConfigs[0].TopologyConstraint = rack
			t.Cliques[1].TopologyConstraint = rack
		}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint", "spec.template.cliques[1].topologyConstraint"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := &corev1alpha1.PodCliqueSet{}
			pcs.Spec.Template.Cliques = []*corev1alpha1.PodCliqueTemplateSpec{{Name: "a"}, {Name: "b"}}
			pcs.Spec.Template.PodCliqueScalingGroupConfigs = []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"b"}}}
			tc.mutate(&pcs.Spec.Template)
			warnings, errs := New().ValidatePodCliqueSet(context.Background(), pcs)
			assert.Equal(t, []string{GangNotEnforcedWarning}, warnings)
			var fields []string
			for _, e := range errs {
				assert.Equal(t, field.ErrorTypeForbidden, e.Type)
				assert.Contains(t, e.Detail, "Workload API")
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tc.wantFields, fields)
		})
	}
}
