package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func sliced(tc *corev1alpha1.TopologyConstraint, domain corev1alpha1.TopologyDomain, maxSize, size *int32) *corev1alpha1.TopologyConstraint {
	tc.Slice = &corev1alpha1.SliceConstraint{Domain: domain, MaxSize: maxSize, Size: size}
	return tc
}

func TestValidateSlices(t *testing.T) {
	gpu := clusterTopology("gpu", "zone", "block", "rack", "host")
	const (
		routerSlice = "spec.template.cliques[0].topologyConstraint.slice"
		decodeSlice = "spec.template.cliques[2].topologyConstraint.slice"
		groupSlice  = "spec.template.podCliqueScalingGroups[0].topologyConstraint.slice"
		pcsSlice    = "spec.template.topologyConstraint.slice"
	)
	sixteen := ptr.To[int32](16)
	cases := []struct {
		name               string
		pcs, group, router *corev1alpha1.TopologyConstraint
		decode             *corev1alpha1.TopologyConstraint
		want               []fieldErr
	}{
		{name: "racks inside the clique's block", router: sliced(named("gpu", pack("block", "")), "rack", sixteen, nil)},
		{name: "slice level equal to the pack level", router: sliced(named("gpu", pack("rack", "")), "rack", nil, sixteen)},
		{name: "slice alone, packed by the PodCliqueSet", pcs: named("gpu", pack("block", "")),
			router: sliced(&corev1alpha1.TopologyConstraint{}, "rack", sixteen, nil)},
		{name: "slice inside the scaling group's block", pcs: named("gpu", pack("zone", "")), group: pack("block", ""),
			decode: sliced(&corev1alpha1.TopologyConstraint{}, "host", sixteen, nil)},
		{name: "slice broader than the clique's pack level", router: sliced(named("gpu", pack("rack", "")), "block", sixteen, nil),
			want: []fieldErr{"Invalid " + routerSlice + ".domain"}},
		{name: "slice broader than the scaling group's pack level", pcs: named("gpu", pack("zone", "")), group: pack("rack", ""),
			decode: sliced(&corev1alpha1.TopologyConstraint{}, "block", sixteen, nil),
			want:   []fieldErr{"Invalid " + decodeSlice + ".domain"}},
		{name: "slice broader than the preferred level when nothing is required", router: sliced(named("gpu", pack("", "rack")), "zone", sixteen, nil),
			want: []fieldErr{"Invalid " + routerSlice + ".domain"}},
		{name: "unknown level", router: sliced(named("gpu", pack("block", "")), "numa", sixteen, nil),
			want: []fieldErr{"NotSupported " + routerSlice + ".domain"}},
		{name: "neither maxSize nor size", router: sliced(named("gpu", pack("block", "")), "rack", nil, nil),
			want: []fieldErr{"Required " + routerSlice + ".maxSize"}},
		{name: "both maxSize and size", router: sliced(named("gpu", pack("block", "")), "rack", sixteen, sixteen),
			want: []fieldErr{"Forbidden " + routerSlice + ".size"}},
		{name: "size below 1", router: sliced(named("gpu", pack("block", "")), "rack", nil, ptr.To[int32](0)),
			want: []fieldErr{"Invalid " + routerSlice + ".size"}},
		{name: "a scaling group's slice is not supported", pcs: named("gpu", pack("zone", "")),
			group: sliced(pack("block", ""), "rack", sixteen, nil), want: []fieldErr{"Forbidden " + groupSlice}},
		{name: "a PodCliqueSet's slice is not supported", pcs: sliced(named("gpu", pack("block", "")), "rack", sixteen, nil),
			want: []fieldErr{"Forbidden " + pcsSlice}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := validPCS()
			pcs.Spec.Template.TopologyConstraint = tc.pcs
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc.group
			pcs.Spec.Template.Cliques[0].TopologyConstraint = tc.router
			pcs.Spec.Template.Cliques[2].TopologyConstraint = tc.decode
			_, errs := ValidateTopologyConstraints(pcs, true, lookupOf(gpu))
			requireExactly(t, errs, tc.want...)
		})
	}
}

// TestSliceIsImmutable: a repair of an update (packDomain moved to pack.required) does not
// carry a change of the slice with it.
func TestSliceIsImmutable(t *testing.T) {
	oldPCS := validPCS()
	oldPCS.Spec.Template.Cliques[0].TopologyConstraint = sliced(&corev1alpha1.TopologyConstraint{TopologyName: "gpu", PackDomain: "block"},
		"rack", ptr.To[int32](16), nil)
	repaired := oldPCS.DeepCopy()
	repaired.Spec.Template.Cliques[0].TopologyConstraint.PackDomain = ""
	repaired.Spec.Template.Cliques[0].TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "block"}
	_, errs := ValidatePodCliqueSetUpdate(repaired, oldPCS)
	assert.Empty(t, errs, "the repair alone is allowed")

	changed := repaired.DeepCopy()
	changed.Spec.Template.Cliques[0].TopologyConstraint.Slice.MaxSize = ptr.To[int32](8)
	_, errs = ValidatePodCliqueSetUpdate(changed, oldPCS)
	requireExactly(t, errs, "Invalid spec.template.cliques[0].topologyConstraint")
}
