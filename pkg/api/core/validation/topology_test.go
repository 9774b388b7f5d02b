package validation

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// lookupOf serves the given ClusterTopologies by name.
func lookupOf(cts ...*corev1alpha1.ClusterTopology) TopologyLookup {
	return func(name string) (*corev1alpha1.ClusterTopology, error) {
		for _, ct := range cts {
			if ct.Name == name {
				return ct, nil
			}
		}
		return nil, nil
	}
}

func clusterTopology(name string, domains ...corev1alpha1.TopologyDomain) *corev1alpha1.ClusterTopology {
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, d := range domains {
		ct.Spec.Levels = append(ct.Spec.Levels, corev1alpha1.TopologyLevel{Domain: d, Key: "example.com/" + string(d)})
	}
	return ct
}

func pack(required, preferred corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
	return &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: required, Preferred: preferred}}
}

func named(name string, tc *corev1alpha1.TopologyConstraint) *corev1alpha1.TopologyConstraint {
	tc.TopologyName = name
	return tc
}

func TestValidateTopologyConstraints(t *testing.T) {
	gpu := clusterTopology("gpu", "zone", "block", "rack", "host")
	const (
		pcsTC    = "spec.template.topologyConstraint"
		groupTC  = "spec.template.podCliqueScalingGroups[0].topologyConstraint"
		memberTC = "spec.template.cliques[1].topologyConstraint"
		aloneTC  = "spec.template.cliques[0].topologyConstraint"
	)
	type constraints struct {
		pcs, group, member, standalone *corev1alpha1.TopologyConstraint
	}
	cases := []struct {
		name         string
		tcs          constraints
		want         []fieldErr
		wantWarnings int
	}{
		{name: "none", tcs: constraints{}},
		{name: "valid hierarchy with inheritance", tcs: constraints{
			pcs: named("gpu", pack("block", "rack")), group: pack("rack", "rack"), member: pack("host", "host"), standalone: &corev1alpha1.TopologyConstraint{PackDomain: "rack"}}},
		{name: "equal to the parent", tcs: constraints{pcs: named("gpu", pack("rack", "")), group: named("gpu", pack("rack", ""))}},
		{name: "missing topologyName at PodCliqueSet level", tcs: constraints{pcs: pack("rack", "")},
			want: []fieldErr{"Required " + pcsTC + ".topologyName"}},
		{name: "clique constraint without any topologyName", tcs: constraints{standalone: pack("rack", "")},
			want: []fieldErr{"Required " + aloneTC + ".topologyName"}},
		{name: "member inherits from its group's name", tcs: constraints{group: named("gpu", pack("rack", "")), member: pack("host", "")}},
		{name: "child names a different topology", tcs: constraints{pcs: named("gpu", pack("zone", "")), member: named("other", pack("host", ""))},
			want: []fieldErr{"Invalid " + memberTC + ".topologyName"}},
		{name: "unknown topology", tcs: constraints{pcs: named("nope", pack("rack", ""))},
			want: []fieldErr{"NotFound " + pcsTC + ".topologyName"}},
		{name: "unknown domains", tcs: constraints{pcs: named("gpu", &corev1alpha1.TopologyConstraint{PackDomain: "region"}), member: pack("", "numa")},
			want: []fieldErr{"NotSupported " + pcsTC + ".packDomain", "NotSupported " + memberTC + ".pack.preferred"}},
		{name: "group broader than the PodCliqueSet", tcs: constraints{pcs: named("gpu", pack("rack", "")), group: pack("block", "")},
			want: []fieldErr{"Invalid " + groupTC + ".pack.required"}},
		{name: "member broader than its group", tcs: constraints{pcs: named("gpu", pack("zone", "")), group: pack("rack", ""), member: pack("block", "")},
			want: []fieldErr{"Invalid " + memberTC + ".pack.required"}},
		{name: "member compared with the PodCliqueSet when the group has no required domain", tcs: constraints{
			pcs: named("gpu", pack("rack", "")), group: pack("", "host"), member: pack("block", "")},
			want: []fieldErr{"Invalid " + memberTC + ".pack.required"}},
		{name: "preferred against preferred", tcs: constraints{pcs: named("gpu", pack("zone", "rack")), standalone: pack("zone", "block")},
			want: []fieldErr{"Invalid " + aloneTC + ".pack.preferred"}},
		{name: "required child may be broader than a preferred parent", tcs: constraints{pcs: named("gpu", pack("", "host")), standalone: pack("rack", "")}},
		{name: "preferred broader than required warns", tcs: constraints{pcs: named("gpu", pack("rack", "block"))}, wantWarnings: 1},
		{name: "constraint without a domain", tcs: constraints{pcs: named("gpu", &corev1alpha1.TopologyConstraint{}), group: &corev1alpha1.TopologyConstraint{}},
			want: []fieldErr{"Required " + groupTC + ".packDomain"}},
		{name: "the PodCliqueSet's constraint may only name the topology", tcs: constraints{pcs: named("gpu", &corev1alpha1.TopologyConstraint{}), member: pack("rack", "")}},
		{name: "a child's constraint needs a domain", tcs: constraints{pcs: named("gpu", pack("block", "")), member: named("gpu", &corev1alpha1.TopologyConstraint{})},
			want: []fieldErr{"Required " + memberTC + ".packDomain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := validPCS()
			tpl := &pcs.Spec.Template
			tpl.TopologyConstraint = tc.tcs.pcs
			tpl.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc.tcs.group
			tpl.Cliques[1].TopologyConstraint = tc.tcs.member
			tpl.Cliques[0].TopologyConstraint = tc.tcs.standalone
			warnings, errs := ValidateTopologyConstraints(pcs, true, lookupOf(gpu))
			requireExactly(t, errs, tc.want...)
			assert.Len(t, warnings, tc.wantWarnings, "warnings: %v", warnings)
		})
	}
}

func TestTopologyConstraintsAreRejectedWhenTASIsDisabled(t *testing.T) {
	pcs := validPCS()
	pcs.Spec.Template.TopologyConstraint = named("gpu", pack("rack", ""))
	pcs.Spec.Template.Cliques[2].TopologyConstraint = pack("host", "")
	lookupCalled := false
	_, errs := ValidateTopologyConstraints(pcs, false, func(string) (*corev1alpha1.ClusterTopology, error) {
		lookupCalled = true
		return nil, nil
	})
	requireExactly(t, errs, "Forbidden spec.template.topologyConstraint", "Forbidden spec.template.cliques[2].topologyConstraint")
	assert.False(t, lookupCalled)

	_, errs = ValidateTopologyConstraints(validPCS(), false, nil)
	assert.Empty(t, errs, "a PodCliqueSet without constraints needs no topology-aware scheduling")
}

func TestTopologyLookupFailureIsAnInternalError(t *testing.T) {
	pcs := validPCS()
	pcs.Spec.Template.TopologyConstraint = named("gpu", pack("rack", ""))
	_, errs := ValidateTopologyConstraints(pcs, true, func(string) (*corev1alpha1.ClusterTopology, error) {
		return nil, errors.New("connection refused")
	})
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
	assert.Contains(t, errs[0].Error(), "connection refused")
}

func TestEffectiveTopologyName(t *testing.T) {
	pcs := validPCS()
	assert.Empty(t, EffectiveTopologyName(pcs))
	pcs.Spec.Template.Cliques[2].TopologyConstraint = named("from-clique", pack("host", ""))
	assert.Equal(t, "from-clique", EffectiveTopologyName(pcs))
	pcs.Spec.Template.TopologyConstraint = named("from-pcs", pack("rack", ""))
	assert.Equal(t, "from-pcs", EffectiveTopologyName(pcs))
}

func TestValidateClusterTopology(t *testing.T) {
	ct := clusterTopology("gpu", "zone", "rack")
	ct.Spec.SchedulerReferences = []corev1alpha1.SchedulerReference{{SchedulerName: "kai-scheduler", Reference: "gpu"}}
	enabled := []string{"kai-scheduler", "koord-scheduler"}
	requireExactly(t, ValidateClusterTopology(ct, enabled))

	bad := ct.DeepCopy()
	bad.Spec.Levels = append(bad.Spec.Levels, corev1alpha1.TopologyLevel{Domain: "zone", Key: "example.com/rack"})
	bad.Spec.SchedulerReferences = append(bad.Spec.SchedulerReferences,
		corev1alpha1.SchedulerReference{SchedulerName: "kai-scheduler", Reference: "again"},
		corev1alpha1.SchedulerReference{SchedulerName: "grove-scheduler", Reference: "x"})
	requireExactly(t, ValidateClusterTopology(bad, enabled),
		"Duplicate spec.levels[2].domain", "Duplicate spec.levels[2].key",
		"Duplicate spec.schedulerReferences[1].schedulerName", "NotSupported spec.schedulerReferences[2].schedulerName")

	// A reference that was accepted before its backend was disabled survives unrelated updates;
	// a new one to a disabled backend does not get in.
	updated := ct.DeepCopy()
	updated.Spec.Levels = append(updated.Spec.Levels, corev1alpha1.TopologyLevel{Domain: "host", Key: "kubernetes.io/hostname"})
	requireExactly(t, ValidateClusterTopologyUpdate(updated, ct, []string{"koord-scheduler"}))
	updated.Spec.SchedulerReferences = append(updated.Spec.SchedulerReferences, corev1alpha1.SchedulerReference{SchedulerName: "grove-scheduler", Reference: "x"})
	requireExactly(t, ValidateClusterTopologyUpdate(updated, ct, []string{"koord-scheduler"}), "NotSupported spec.schedulerReferences[1].schedulerName")
}
