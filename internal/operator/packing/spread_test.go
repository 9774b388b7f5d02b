package packing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestTranslateReplicaSpread(t *testing.T) {
	tc := &corev1alpha1.TopologyConstraint{TopologyName: "fabric", ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{
		{Domain: "rack"},
		{Domain: "zone", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway, MaxSkew: ptr.To[int32](2)},
		{Domain: "pod-rail", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway},
	}}
	assert.True(t, HasConstraints(template(tc, nil, nil)), "a spread alone is a constraint")
	tr := Translate(template(tc, nil, nil), fabric)
	assert.Equal(t, []corev1alpha1.TopologyDomain{"pod-rail"}, tr.MissingDomains)
	assert.Equal(t, []schedv1alpha1.ReplicaSpreadConstraint{
		{Group: "pcs", Member: "pcs-1", TopologyKey: "network.grove.io/rack", Required: true},
		{Group: "pcs", Member: "pcs-1", TopologyKey: "topology.kubernetes.io/zone", MaxSkew: 2},
	}, tr.ReplicaSpread("pcs", "pcs-1"))
	assert.Nil(t, Translate(template(&corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack"}, nil, nil), fabric).ReplicaSpread("pcs", "pcs-0"))
}
