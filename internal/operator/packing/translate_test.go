package packing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

var fabric = []corev1alpha1.TopologyLevel{
	{Domain: "zone", Key: "topology.kubernetes.io/zone"},
	{Domain: "block", Key: "network.grove.io/block"},
	{Domain: "rack", Key: "network.grove.io/rack"},
	{Domain: "host", Key: "kubernetes.io/hostname"},
}

func pack(required, preferred string) *schedv1alpha1.TopologyConstraint {
	p := &schedv1alpha1.TopologyPackConstraint{}
	if required != "" {
		p.Required = ptr.To(required)
	}
	if preferred != "" {
		p.Preferred = ptr.To(preferred)
	}
	return &schedv1alpha1.TopologyConstraint{PackConstraint: p}
}

func template(pcs, group, clique *corev1alpha1.TopologyConstraint) *corev1alpha1.PodCliqueSetTemplateSpec {
	return &corev1alpha1.PodCliqueSetTemplateSpec{
		TopologyConstraint: pcs,
		Cliques: []*corev1alpha1.PodCliqueTemplateSpec{
			{Name: "router"},
			{Name: "prefill", TopologyConstraint: clique},
		},
		PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "workers", CliqueNames: []string{"prefill"}, TopologyConstraint: group},
		},
	}
}

func TestTranslate(t *testing.T) {
	cases := []struct {
		name        string
		tmpl        *corev1alpha1.PodCliqueSetTemplateSpec
		levels      []corev1alpha1.TopologyLevel
		wantPCS     *schedv1alpha1.TopologyConstraint
		wantGroup   *schedv1alpha1.TopologyConstraint
		wantClique  *schedv1alpha1.TopologyConstraint
		wantScaled  *schedv1alpha1.TopologyConstraint
		wantMissing []corev1alpha1.TopologyDomain
	}{
		{
			name:   "no constraints",
			tmpl:   template(nil, nil, nil),
			levels: fabric,
		},
		{
			name:       "packDomain means pack.required; scaled gangs fall back to the PodCliqueSet",
			tmpl:       template(&corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "zone"}, nil, nil),
			levels:     fabric,
			wantPCS:    pack("topology.kubernetes.io/zone", ""),
			wantScaled: pack("topology.kubernetes.io/zone", ""),
		},
		{
			name: "every level with required and preferred",
			tmpl: template(
				&corev1alpha1.TopologyConstraint{TopologyName: "fabric", Pack: &corev1alpha1.TopologyPackConstraint{Required: "block", Preferred: "rack"}},
				&corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}},
				&corev1alpha1.TopologyConstraint{PackDomain: "rack", Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}},
			),
			levels:     fabric,
			wantPCS:    pack("network.grove.io/block", "network.grove.io/rack"),
			wantGroup:  pack("network.grove.io/rack", ""),
			wantClique: pack("network.grove.io/rack", "kubernetes.io/hostname"),
			wantScaled: pack("network.grove.io/rack", ""),
		},
		{
			name: "missing domains are dropped and reported once, sorted",
			tmpl: template(
				&corev1alpha1.TopologyConstraint{TopologyName: "fabric", Pack: &corev1alpha1.TopologyPackConstraint{Required: "zone", Preferred: "rack"}},
				&corev1alpha1.TopologyConstraint{PackDomain: "rack"},
				&corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "numa", Preferred: "host"}},
			),
			levels:      fabric[:1:1],
			wantPCS:     pack("topology.kubernetes.io/zone", ""),
			wantScaled:  pack("topology.kubernetes.io/zone", ""),
			wantMissing: []corev1alpha1.TopologyDomain{"host", "numa", "rack"},
		},
		{
			name:        "missing ClusterTopology resolves nothing",
			tmpl:        template(&corev1alpha1.TopologyConstraint{TopologyName: "gone", PackDomain: "rack"}, nil, &corev1alpha1.TopologyConstraint{PackDomain: "host"}),
			levels:      nil,
			wantMissing: []corev1alpha1.TopologyDomain{"host", "rack"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Translate(tc.tmpl, tc.levels)
			assert.Equal(t, tc.wantPCS, got.PodCliqueSet)
			assert.Equal(t, tc.wantGroup, got.ScalingGroups["workers"])
			assert.Equal(t, tc.wantClique, got.Cliques["prefill"])
			assert.Nil(t, got.Cliques["router"])
			assert.Equal(t, tc.wantScaled, got.ScaledPodGang("workers"))
			assert.Equal(t, tc.wantMissing, got.MissingDomains)
		})
	}
}

func TestNameOfIsInheritedFromThePodCliqueSet(t *testing.T) {
	cases := []struct {
		name string
		tmpl *corev1alpha1.PodCliqueSetTemplateSpec
		want string
	}{
		{"PodCliqueSet level", template(&corev1alpha1.TopologyConstraint{TopologyName: "a", PackDomain: "zone"}, &corev1alpha1.TopologyConstraint{TopologyName: "b", PackDomain: "rack"}, nil), "a"},
		{"only a scaling group names it", template(nil, &corev1alpha1.TopologyConstraint{TopologyName: "b", PackDomain: "rack"}, nil), "b"},
		{"only a clique names it", template(nil, nil, &corev1alpha1.TopologyConstraint{TopologyName: "c", PackDomain: "host"}), "c"},
		{"none", template(nil, &corev1alpha1.TopologyConstraint{PackDomain: "rack"}, nil), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, NameOf(tc.tmpl)) })
	}
}

func TestHasConstraints(t *testing.T) {
	assert.False(t, HasConstraints(template(nil, nil, nil)))
	assert.False(t, HasConstraints(template(&corev1alpha1.TopologyConstraint{TopologyName: "a"}, nil, nil)), "a name alone constrains nothing")
	assert.True(t, HasConstraints(template(nil, nil, &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}})))
	assert.True(t, HasConstraints(template(nil, &corev1alpha1.TopologyConstraint{PackDomain: "rack"}, nil)))
}

func TestLevelsUnavailableCondition(t *testing.T) {
	cases := []struct {
		name        string
		topology    string
		found       bool
		missing     []corev1alpha1.TopologyDomain
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{"all resolve", "fabric", true, nil, metav1.ConditionFalse, common.ReasonAllTopologyLevelsAvailable, `every topology domain resolves in ClusterTopology "fabric"`},
		{"topology missing", "fabric", false, []corev1alpha1.TopologyDomain{"rack"}, metav1.ConditionTrue, common.ReasonClusterTopologyNotFound, `ClusterTopology "fabric" does not exist`},
		{"domains missing", "fabric", true, []corev1alpha1.TopologyDomain{"host", "rack"}, metav1.ConditionTrue, common.ReasonTopologyLevelsUnavailable, "domain(s) host, rack"},
		{"no name", "", false, nil, metav1.ConditionUnknown, common.ReasonTopologyNameMissing, "no topologyName"},
	}
	disabled := LevelsUnavailableCondition(false, "fabric", false, nil)
	assert.Equal(t, metav1.ConditionUnknown, disabled.Status)
	assert.Equal(t, common.ReasonTopologyAwareSchedulingDisabled, disabled.Reason)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := LevelsUnavailableCondition(true, tc.topology, tc.found, tc.missing)
			assert.Equal(t, common.ConditionTopologyLevelsUnavailable, c.Type)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Contains(t, c.Message, tc.wantMessage)
		})
	}
}
