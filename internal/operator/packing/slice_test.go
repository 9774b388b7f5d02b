package packing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestTranslateSlices(t *testing.T) {
	clique := &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "block"},
		Slice: &corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: ptr.To[int32](16)}}
	tr := Translate(template(&corev1alpha1.TopologyConstraint{TopologyName: "fabric"}, nil, clique), fabric)
	assert.Equal(t, &schedv1alpha1.PodGroupSlices{TopologyKey: "network.grove.io/rack", Required: true, Sizes: []int32{16, 16}},
		tr.PodGroupSlices("prefill", 32))
	assert.Nil(t, tr.PodGroupSlices("router", 32), "router is not sliced")
	assert.Nil(t, tr.PodGroupSlices("prefill", 0), "no pods, no slices")

	onlySlice := &corev1alpha1.TopologyConstraint{Slice: &corev1alpha1.SliceConstraint{Domain: "rack", Size: ptr.To[int32](8),
		WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway}}
	tmpl := template(&corev1alpha1.TopologyConstraint{TopologyName: "fabric"}, nil, onlySlice)
	assert.True(t, HasConstraints(tmpl), "a slice alone is a constraint")
	assert.Equal(t, &schedv1alpha1.PodGroupSlices{TopologyKey: "network.grove.io/rack", Sizes: []int32{8, 8, 4}},
		Translate(tmpl, fabric).PodGroupSlices("prefill", 20))

	missing := &corev1alpha1.TopologyConstraint{Slice: &corev1alpha1.SliceConstraint{Domain: "pod-rail", MaxSize: ptr.To[int32](8)}}
	tr = Translate(template(&corev1alpha1.TopologyConstraint{TopologyName: "fabric"}, nil, missing), fabric)
	assert.Equal(t, []corev1alpha1.TopologyDomain{"pod-rail"}, tr.MissingDomains)
	assert.Nil(t, tr.PodGroupSlices("prefill", 16))
}
