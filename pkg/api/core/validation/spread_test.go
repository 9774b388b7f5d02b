package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func spread(tc *corev1alpha1.TopologyConstraint, domains ...corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
	for _, d := range domains {
		tc.ReplicaSpreadConstraints = append(tc.ReplicaSpreadConstraints, corev1alpha1.ReplicaSpreadConstraint{Domain: d})
	}
	return tc
}

func TestValidateReplicaSpread(t *testing.T) {
	gpu := clusterTopology("gpu", "zone", "block", "rack", "host")
	const (
		pcsSpread   = "spec.template.topologyConstraint.replicaSpreadConstraints"
		groupSpread = "spec.template.podCliqueScalingGroups[0].topologyConstraint.replicaSpreadConstraints"
	)
	cases := []struct {
		name       string
		pcs, group *corev1alpha1.TopologyConstraint
		want       []fieldErr
	}{
		{name: "spread over the level each replica packs into", pcs: spread(named("gpu", pack("rack", "")), "rack")},
		{name: "spread broader than the pack level", pcs: spread(named("gpu", pack("rack", "")), "zone", "block")},
		{name: "spread without packing", pcs: spread(named("gpu", &corev1alpha1.TopologyConstraint{}), "host")},
		{name: "spread narrower than the required pack level", pcs: spread(named("gpu", pack("rack", "")), "host"),
			want: []fieldErr{"Invalid " + pcsSpread + "[0].domain"}},
		{name: "spread narrower than the preferred pack level when nothing is required", pcs: spread(named("gpu", pack("", "block")), "rack"),
			want: []fieldErr{"Invalid " + pcsSpread + "[0].domain"}},
		{name: "unknown level", pcs: spread(named("gpu", pack("rack", "")), "zone", "region"),
			want: []fieldErr{"NotSupported " + pcsSpread + "[1].domain"}},
		{name: "a scaling group's replicas spread over racks inside the replica's zone", pcs: named("gpu", pack("zone", "")), group: spread(pack("rack", ""), "rack", "block")},
		{name: "a scaling group's spread narrower than its pack level", pcs: named("gpu", pack("zone", "")), group: spread(pack("rack", ""), "host"),
			want: []fieldErr{"Invalid " + groupSpread + "[0].domain"}},
		{name: "a scaling group's required spread broader than the replica's required pack", pcs: named("gpu", pack("block", "")), group: spread(pack("rack", ""), "rack", "zone"),
			want: []fieldErr{"Invalid " + groupSpread + "[1].domain"}},
		{name: "a scaling group's preferred spread may be broader than the replica's pack", pcs: named("gpu", pack("block", "")),
			group: &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"},
				ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{{Domain: "zone", WhenUnsatisfiable: corev1alpha1.SpreadScheduleAnyway}}}},
		{name: "a scaling group's spread needs the scaling group packed", pcs: named("gpu", pack("zone", "")), group: spread(&corev1alpha1.TopologyConstraint{}, "rack"),
			want: []fieldErr{"Required spec.template.podCliqueScalingGroups[0].topologyConstraint.packDomain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := validPCS()
			pcs.Spec.Template.TopologyConstraint = tc.pcs
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc.group
			_, errs := ValidateTopologyConstraints(pcs, true, lookupOf(gpu))
			requireExactly(t, errs, tc.want...)
		})
	}
}

// TestReplicaSpreadIsImmutable: a repair of an update (packDomain moved to pack.required) does
// not carry a change of the spread with it.
func TestReplicaSpreadIsImmutable(t *testing.T) {
	oldPCS := validPCS()
	oldPCS.Spec.Template.TopologyConstraint = spread(&corev1alpha1.TopologyConstraint{TopologyName: "gpu", PackDomain: "rack"}, "rack")
	repaired := oldPCS.DeepCopy()
	repaired.Spec.Template.TopologyConstraint.PackDomain = ""
	repaired.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "rack"}
	_, errs := ValidatePodCliqueSetUpdate(repaired, oldPCS)
	assert.Empty(t, errs, "the repair alone is allowed")

	changed := repaired.DeepCopy()
	changed.Spec.Template.TopologyConstraint.ReplicaSpreadConstraints[0].Domain = "zone"
	_, errs = ValidatePodCliqueSetUpdate(changed, oldPCS)
	requireExactly(t, errs, "Invalid spec.template.topologyConstraint")
}
