package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestRefuseSlices(t *testing.T) {
	sliced := func(name string, action corev1alpha1.SpreadAction) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: name, TopologyConstraint: &corev1alpha1.TopologyConstraint{
			Slice: &corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: ptr.To[int32](16), WhenUnsatisfiable: action}}}
	}
	pcs := &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
		Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "router"}, sliced("decode", ""), sliced("prefill", corev1alpha1.SpreadScheduleAnyway)}}}}
	warnings, errs := RefuseSlices(pcs, "kai-scheduler")
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.cliques[1].topologyConstraint.slice.whenUnsatisfiable", errs[0].Field, "the default is required")
	assert.Contains(t, errs[0].Detail, `kai-scheduler cannot place each slice of clique "decode" whole in a rack of its own`)
	assert.Equal(t, []string{"spec.template.cliques[2].topologyConstraint.slice: kai-scheduler does not cut cliques into slices; the preferred slices over rack domains are ignored"}, warnings)

	warnings, errs = RefuseSlices(&corev1alpha1.PodCliqueSet{}, "kai-scheduler")
	assert.Empty(t, warnings)
	assert.Empty(t, errs, "nothing to refuse without a slice")
}
