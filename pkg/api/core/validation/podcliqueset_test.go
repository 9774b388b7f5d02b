package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// validPCS is a defaulted PodCliqueSet with a standalone clique "router" and a scaling group
// "workers" of the cliques "prefill" and "decode".
func validPCS() *corev1alpha1.PodCliqueSet {
	clique := func(name string, replicas int32) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{
			Replicas: replicas,
			PodSpec:  corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}
	}
	pcs := &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "inference", Namespace: "ns"},
		Spec: corev1alpha1.PodCliqueSetSpec{
			Replicas: 2,
			Template: corev1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("router", 2), clique("prefill", 4), clique("decode", 2)},
				PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{
					{Name: "workers", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](2)},
				},
			},
		},
	}
	corev1alpha1.SetDefaultsPodCliqueSet(pcs)
	return pcs
}

// fieldErr is the type and path of an expected error, e.g. "FieldValueInvalid spec.replicas".
type fieldErr string

func errKeys(errs field.ErrorList) []string {
	keys := make([]string, 0, len(errs))
	for _, e := range errs {
		keys = append(keys, typeName(e.Type)+" "+e.Field)
	}
	return keys
}

func typeName(t field.ErrorType) string {
	return map[field.ErrorType]string{
		field.ErrorTypeNotFound: "NotFound", field.ErrorTypeRequired: "Required", field.ErrorTypeDuplicate: "Duplicate",
		field.ErrorTypeInvalid: "Invalid", field.ErrorTypeNotSupported: "NotSupported", field.ErrorTypeForbidden: "Forbidden",
		field.ErrorTypeTooLong: "TooLong", field.ErrorTypeTooMany: "TooMany", field.ErrorTypeInternal: "Internal",
		field.ErrorTypeTypeInvalid: "TypeInvalid",
	}[t]
}

func requireExactly(t *testing.T, errs field.ErrorList, want ...fieldErr) {
	t.Helper()
	var w []string
	for _, x := range want {
		w = append(w, string(x))
	}
	require.ElementsMatch(t, w, errKeys(errs), "errors: %v", errs)
}

func TestValidPodCliqueSetIsAccepted(t *testing.T) {
	warnings, errs := ValidatePodCliqueSet(validPCS())
	assert.Empty(t, errs)
	assert.Empty(t, warnings)
}

func TestValidatePodCliqueSetRejections(t *testing.T) {
	explicit := func(p *corev1alpha1.PodCliqueSet) {
		p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)
	}
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		want   []fieldErr
	}{
		{"name not a DNS-1035 label", func(p *corev1alpha1.PodCliqueSet) { p.Name = "1inference" },
			[]fieldErr{"Invalid metadata.name"}},
		{"negative replicas", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Replicas = -1 },
			[]fieldErr{"Invalid spec.replicas"}},
		{"no cliques", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = nil
			p.Spec.Template.PodCliqueScalingGroupConfigs = nil
		}, []fieldErr{"Required spec.template.cliques"}},
		{"null clique", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0] = nil },
			[]fieldErr{"Required spec.template.cliques[0]"}},
		{"duplicate clique name", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Name = "decode"
			p.Spec.Template.Cliques[0].Spec.RoleName = "other"
			p.Spec.Template.Cliques[0].RollingUpdate = nil // a member's budget is the group's
		}, []fieldErr{"Duplicate spec.template.cliques[2].name"}},
		{"duplicate role name", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.RoleName = "router" },
			[]fieldErr{"Duplicate spec.template.cliques[1].spec.roleName"}},
		{"clique name with a dot", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Name = "r.outer"
			p.Spec.Template.Cliques[0].Spec.RoleName = "r.outer"
		}, []fieldErr{"Invalid spec.template.cliques[0].name"}},
		{"zero clique replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas = 0
			p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](1)
		}, []fieldErr{"Invalid spec.template.cliques[0].spec.replicas"}},
		{"clique labels and annotations as object metadata", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{"ok": "v", "bad/key/x": "v", "long": strings.Repeat("v", 64)}
			p.Spec.Template.Cliques[1].Annotations = map[string]string{"big": strings.Repeat("v", 300<<10)}
		}, []fieldErr{"Invalid spec.template.cliques[0].labels", "Invalid spec.template.cliques[0].labels", "TooLong spec.template.cliques[1].annotations"}},
		{"reserved labels", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Labels = map[string]string{"grove.io/podgang": "x", "grove.io/base-podgang": "y", "grove.io/team": "z"}
		}, []fieldErr{"Forbidden spec.template.cliques[2].labels[grove.io/base-podgang]", "Forbidden spec.template.cliques[2].labels[grove.io/podgang]"}},
		{"minAvailable above replicas", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](3) },
			[]fieldErr{"Invalid spec.template.cliques[0].spec.minAvailable"}},
		{"minAvailable zero", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](0) },
			[]fieldErr{"Invalid spec.template.cliques[0].spec.minAvailable"}},
		{"minAvailable missing", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = nil },
			[]fieldErr{"Required spec.template.cliques[0].spec.minAvailable"}},
		{"autoscaler minReplicas below minAvailable", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 5}
		}, []fieldErr{"Invalid spec.template.cliques[0].spec.autoScalingConfig.minReplicas"}},
		{"autoscaler maxReplicas below minReplicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 1}
		}, []fieldErr{"Invalid spec.template.cliques[0].spec.autoScalingConfig.maxReplicas"}},
		{"autoscaler maxReplicas below replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](4), MaxReplicas: 4}
			p.Spec.Template.PodCliqueScalingGroupConfigs = nil
			p.Spec.Template.Cliques[1].Spec.ScaleConfig.MinReplicas = ptr.To[int32](2)
			p.Spec.Template.Cliques[1].Spec.ScaleConfig.MaxReplicas = 3
		}, []fieldErr{"Invalid spec.template.cliques[1].spec.autoScalingConfig.minReplicas", "Invalid spec.template.cliques[1].spec.autoScalingConfig.maxReplicas"}},
		{"autoscaler on a scaling-group member", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](4), MaxReplicas: 8}
		}, []fieldErr{"Forbidden spec.template.cliques[1].spec.autoScalingConfig"}},
		{"restart policy OnFailure", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyOnFailure
		}, []fieldErr{"NotSupported spec.template.cliques[0].spec.podSpec.restartPolicy"}},
		{"nodeName set", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "n1" },
			[]fieldErr{"Forbidden spec.template.cliques[0].spec.podSpec.nodeName"}},
		{"negative grace period", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](-1)
		}, []fieldErr{"Invalid spec.template.cliques[0].spec.podSpec.terminationGracePeriodSeconds"}},
		{"unknown startup type", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupType("Sometimes"))
		}, []fieldErr{"NotSupported spec.template.cliqueStartupType"}},
		{"zero termination delay", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TerminationDelay = &metav1.Duration{}
		}, []fieldErr{"Invalid spec.template.terminationDelay"}},
		{"bad priority class name", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "High_Prio" },
			[]fieldErr{"Invalid spec.template.priorityClassName"}},
		{"startsAfter unknown clique", func(p *corev1alpha1.PodCliqueSet) {
			explicit(p)
			p.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"router", "cache"}
		}, []fieldErr{"NotFound spec.template.cliques[1].spec.startsAfter[1]"}},
		{"startsAfter itself", func(p *corev1alpha1.PodCliqueSet) {
			explicit(p)
			p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"router"}
		}, []fieldErr{"Invalid spec.template.cliques[0].spec.startsAfter[0]"}},
		{"startsAfter duplicate", func(p *corev1alpha1.PodCliqueSet) {
			explicit(p)
			p.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"router", "router"}
		}, []fieldErr{"Duplicate spec.template.cliques[1].spec.startsAfter[1]"}},
		{"startsAfter cycle", func(p *corev1alpha1.PodCliqueSet) {
			explicit(p)
			p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"decode"}
			p.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"router"}
			p.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"prefill"}
		}, []fieldErr{"Invalid spec.template.cliques[2].spec.startsAfter"}},
		{"scaling group unknown clique", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill", "decode", "cache"}
		}, []fieldErr{"NotFound spec.template.podCliqueScalingGroups[0].cliqueNames[2]"}},
		{"clique in two scaling groups", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				corev1alpha1.PodCliqueScalingGroupConfig{Name: "more", CliqueNames: []string{"decode"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)})
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[1].cliqueNames[0]"}},
		{"clique twice in one scaling group", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill", "prefill"}
		}, []fieldErr{"Duplicate spec.template.podCliqueScalingGroups[0].cliqueNames[1]"}},
		{"duplicate scaling group", func(p *corev1alpha1.PodCliqueSet) {
			g := p.Spec.Template.PodCliqueScalingGroupConfigs[0]
			g.CliqueNames = []string{"router"}
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs, g)
			p.Spec.Template.Cliques[0].RollingUpdate = nil // a member's budget is the group's
		}, []fieldErr{"Duplicate spec.template.podCliqueScalingGroups[1].name"}},
		{"scaling group without cliques", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = nil
		}, []fieldErr{"Required spec.template.podCliqueScalingGroups[0].cliqueNames"}},
		{"scaling group minAvailable above replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](4)
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].minAvailable"}},
		{"scaling group zero replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](0)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](1)
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].replicas", "Invalid spec.template.podCliqueScalingGroups[0].minAvailable"}},
		{"scaling group autoscaler below minAvailable", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 6}
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].scaleConfig.minReplicas"}},
		{"scaling group autoscaler max below replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](2), MaxReplicas: 2}
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].scaleConfig.maxReplicas"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := validPCS()
			tc.mutate(pcs)
			_, errs := ValidatePodCliqueSet(pcs)
			requireExactly(t, errs, tc.want...)
		})
	}
}

func TestStartsAfterCycleNamesTheCycle(t *testing.T) {
	pcs := validPCS()
	pcs.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)
	pcs.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"prefill"}
	pcs.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"decode"}
	pcs.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"router"}
	_, errs := ValidatePodCliqueSet(pcs)
	require.Len(t, errs, 1)
	assert.Equal(t, "decode -> router -> prefill -> decode", errs[0].BadValue)

	// An acyclic chain is fine.
	pcs.Spec.Template.Cliques[2].Spec.StartsAfter = nil
	_, errs = ValidatePodCliqueSet(pcs)
	assert.Empty(t, errs)
}

func TestStartsAfterWithoutExplicitStartupIsOnlyAWarning(t *testing.T) {
	pcs := validPCS()
	pcs.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"nope"}
	warnings, errs := ValidatePodCliqueSet(pcs)
	assert.Empty(t, errs)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "spec.template.cliques[1].spec.startsAfter is ignored")
}

func TestGeneratedNameBudget(t *testing.T) {
	// With four reserved digits per index, a pod name "<pcs>-9999-<clique>-" plus the
	// 5-character random suffix fits 63 characters when len(pcs)+len(clique) <= 51; for a
	// scaling-group member "<pcs>-9999-<sg>-9999-<clique>-" when the three add up to <= 45.
	name := func(first byte, n int) string { return string(first) + strings.Repeat("x", n-1) }
	cases := []struct {
		name                        string
		pcs, standalone, sg, member int
		replicas                    int32
		want                        []fieldErr
		wantDetail                  string
	}{
		{name: "standalone at the limit", pcs: 25, standalone: 26, sg: 1, member: 1},
		{name: "standalone one over", pcs: 26, standalone: 26, sg: 1, member: 1,
			want: []fieldErr{"Invalid spec.template.cliques[0].name"}, wantDetail: "would be 64 characters, more than 63: shorten metadata.name or clique"},
		{name: "member at the limit", pcs: 15, standalone: 1, sg: 15, member: 15},
		{name: "member one over", pcs: 15, standalone: 1, sg: 16, member: 15,
			want: []fieldErr{"Invalid spec.template.cliques[1].name"}, wantDetail: "shorten metadata.name, scaling group"},
		{name: "more replicas than the bound", pcs: 25, standalone: 26, sg: 1, member: 1, replicas: 100001,
			want: []fieldErr{"Invalid spec.replicas", "Invalid spec.template.cliques[0].name"}, wantDetail: "must not exceed 10000"},
		{name: "replicas at the bound fit", pcs: 25, standalone: 26, sg: 1, member: 1, replicas: 10000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := validPCS()
			tpl := &pcs.Spec.Template
			pcs.Name = name('p', tc.pcs)
			if tc.replicas > 0 {
				pcs.Spec.Replicas = tc.replicas
			}
			tpl.Cliques[0].Name = name('s', tc.standalone)
			tpl.Cliques[1].Name = name('m', tc.member)
			tpl.Cliques[2].Name = "d"
			tpl.PodCliqueScalingGroupConfigs[0].Name = name('g', tc.sg)
			tpl.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{tpl.Cliques[1].Name, "d"}
			_, errs := ValidatePodCliqueSet(pcs)
			requireExactly(t, errs, tc.want...)
			if tc.wantDetail != "" {
				assert.Contains(t, errs[0].Detail, tc.wantDetail)
			}
		})
	}
}

func TestGenerateNameCountsTheRandomSuffix(t *testing.T) {
	// A 35-character generateName becomes a 40-character name: the standalone clique "router"
	// still fits, the members of scaling group "workers" do not.
	pcs := validPCS()
	pcs.Name, pcs.GenerateName = "", "p"+strings.Repeat("a", 33)+"-"
	_, errs := ValidatePodCliqueSet(pcs)
	requireExactly(t, errs, "Invalid spec.template.cliques[1].name", "Invalid spec.template.cliques[2].name")
}

func TestResourceSharingRejections(t *testing.T) {
	tpl := func(name string) corev1alpha1.ResourceClaimTemplateConfig {
		return corev1alpha1.ResourceClaimTemplateConfig{Name: name, TemplateSpec: resourcev1.ResourceClaimTemplateSpec{
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu"}}}},
		}}
	}
	share := func(name string, scope corev1alpha1.ResourceSharingScope) corev1alpha1.ResourceSharingSpec {
		return corev1alpha1.ResourceSharingSpec{Name: name, Scope: scope}
	}
	all, per := corev1alpha1.ResourceSharingScopeAllReplicas, corev1alpha1.ResourceSharingScopePerReplica
	withSharing := func(p *corev1alpha1.PodCliqueSet) {
		t := &p.Spec.Template
		t.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{tpl("gpus"), tpl("nics")}
		t.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: share("gpus", all),
			Filter: &corev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"router"}, ChildScalingGroupNames: []string{"workers"}}}}
		t.PodCliqueScalingGroupConfigs[0].ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{{ResourceSharingSpec: share("nics", per),
			Filter: &corev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"decode"}}}}
		t.Cliques[0].ResourceSharing = []corev1alpha1.ResourceSharingSpec{share("gpus", per), {Name: "external", Namespace: "shared", Scope: all}}
	}
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		want   []fieldErr
	}{
		{"valid", func(*corev1alpha1.PodCliqueSet) {}, nil},
		{"duplicate template", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates[1].Name = "gpus"
		}, []fieldErr{"Duplicate spec.template.resourceClaimTemplates[1].name"}},
		{"template without device requests", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates[0].TemplateSpec.Spec.Devices.Requests = nil
		}, []fieldErr{"Required spec.template.resourceClaimTemplates[0].templateSpec.spec.devices.requests"}},
		{"duplicate name in a clique list", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing[1] = share("gpus", all)
		}, []fieldErr{"Duplicate spec.template.cliques[0].resourceSharing[1].name"}},
		{"duplicate name in the PodCliqueSet list", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = append(p.Spec.Template.ResourceSharing, corev1alpha1.PCSResourceSharingSpec{ResourceSharingSpec: share("gpus", per)})
		}, []fieldErr{"Duplicate spec.template.resourceSharing[1].name"}},
		{"namespace on an inline template", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing[0].Namespace = "other"
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].resourceSharing[0].namespace"}},
		{"unknown scope", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing[0].Scope = "Everywhere"
		}, []fieldErr{"NotSupported spec.template.cliques[0].resourceSharing[0].scope"}},
		{"empty PodCliqueSet filter", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Filter = &corev1alpha1.PCSResourceSharingFilter{}
		}, []fieldErr{"Required spec.template.resourceSharing[0].filter"}},
		{"filter names unknown children", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Filter = &corev1alpha1.PCSResourceSharingFilter{
				ChildCliqueNames: []string{"router", "cache"}, ChildScalingGroupNames: []string{"nope"}}
		}, []fieldErr{"NotFound spec.template.resourceSharing[0].filter.childCliqueNames[1]", "NotFound spec.template.resourceSharing[0].filter.childScalingGroupNames[0]"}},
		{"scaling group filter names a non-member", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing[0].Filter.ChildCliqueNames = []string{"router"}
		}, []fieldErr{"NotSupported spec.template.podCliqueScalingGroups[0].resourceSharing[0].filter.childCliqueNames[0]"}},
		{"external template name is not an object name", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing[1].Name = "Shared_GPU"
			p.Spec.Template.ResourceSharing[0].Name = "no_such_inline"
		}, []fieldErr{"Invalid spec.template.cliques[0].resourceSharing[1].name", "Invalid spec.template.resourceSharing[0].name"}},
		{"empty scaling group filter", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing[0].Filter.ChildCliqueNames = nil
		}, []fieldErr{"Required spec.template.podCliqueScalingGroups[0].resourceSharing[0].filter"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := validPCS()
			withSharing(pcs)
			tc.mutate(pcs)
			_, errs := ValidatePodCliqueSet(pcs)
			requireExactly(t, errs, tc.want...)
		})
	}
}

func TestValidatePodCliqueSetUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		want   []fieldErr
	}{
		{"scale out and change pods", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Replicas = 5
			p.Spec.Template.Cliques[0].Spec.Replicas = 3
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:2"
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
			p.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Hour}
		}, nil},
		{"add a clique", func(p *corev1alpha1.PodCliqueSet) {
			c := p.Spec.Template.Cliques[0].DeepCopy()
			c.Name, c.Spec.RoleName = "cache", "cache"
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, c)
		}, []fieldErr{"Forbidden spec.template.cliques[3].name"}},
		{"remove a clique", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = p.Spec.Template.Cliques[:2]
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill"}
		}, []fieldErr{"Forbidden spec.template.cliques", "Invalid spec.template.podCliqueScalingGroups[0].cliqueNames"}},
		{"reorder cliques with AnyOrder", func(p *corev1alpha1.PodCliqueSet) {
			c := p.Spec.Template.Cliques
			c[0], c[2] = c[2], c[0]
		}, nil},
		{"reorder cliques with InOrder", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
			c := p.Spec.Template.Cliques
			c[0], c[2] = c[2], c[0]
		}, []fieldErr{"Invalid spec.template.cliqueStartupType", "Forbidden spec.template.cliques[0].name", "Forbidden spec.template.cliques[2].name"}},
		{"roleName", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.RoleName = "gateway" },
			[]fieldErr{"Invalid spec.template.cliques[0].spec.roleName"}},
		{"minAvailable", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](1) },
			[]fieldErr{"Invalid spec.template.cliques[0].spec.minAvailable"}},
		{"startsAfter", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"router"} },
			[]fieldErr{"Invalid spec.template.cliques[1].spec.startsAfter"}},
		{"schedulerName", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.SchedulerName = "kai-scheduler"
		},
			[]fieldErr{"Invalid spec.template.cliques[0].spec.podSpec.schedulerName"}},
		{"startup type", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)
		}, []fieldErr{"Invalid spec.template.cliqueStartupType"}},
		{"scaling group members", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill"}
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].cliqueNames"}},
		{"scaling group minAvailable", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](1)
		}, []fieldErr{"Invalid spec.template.podCliqueScalingGroups[0].minAvailable"}},
		{"add a scaling group", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				corev1alpha1.PodCliqueScalingGroupConfig{Name: "routers", CliqueNames: []string{"router"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)})
			p.Spec.Template.Cliques[0].RollingUpdate = nil // a member's budget is the group's
		}, []fieldErr{"Forbidden spec.template.podCliqueScalingGroups[1].name"}},
		{"remove the scaling group", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.PodCliqueScalingGroupConfigs = nil },
			[]fieldErr{"Forbidden spec.template.podCliqueScalingGroups"}},
		{"resource sharing", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{
				Name: "ext", Namespace: "shared", Scope: corev1alpha1.ResourceSharingScopeAllReplicas}}}
			p.Spec.Template.Cliques[0].ResourceSharing = []corev1alpha1.ResourceSharingSpec{{Name: "ext", Namespace: "shared", Scope: corev1alpha1.ResourceSharingScopePerReplica}}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{
				Name: "ext", Namespace: "shared", Scope: corev1alpha1.ResourceSharingScopePerReplica}}}
		}, []fieldErr{"Invalid spec.template.resourceSharing", "Invalid spec.template.cliques[0].resourceSharing", "Invalid spec.template.podCliqueScalingGroups[0].resourceSharing"}},
		{"resource claim templates", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{{Name: "gpus", TemplateSpec: resourcev1.ResourceClaimTemplateSpec{
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu"}}}}}}}
		}, []fieldErr{"Invalid spec.template.resourceClaimTemplates"}},
		{"topology constraints", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "t", PackDomain: "rack"}
			p.Spec.Template.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "host"}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack"}
		}, []fieldErr{"Invalid spec.template.topologyConstraint", "Invalid spec.template.cliques[0].topologyConstraint", "Invalid spec.template.podCliqueScalingGroups[0].topologyConstraint"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldPCS := validPCS()
			newPCS := oldPCS.DeepCopy()
			tc.mutate(newPCS)
			_, errs := ValidatePodCliqueSetUpdate(newPCS, oldPCS)
			requireExactly(t, errs, tc.want...)
			for _, e := range errs {
				if e.Type == field.ErrorTypeInvalid && e.BadValue != nil {
					assert.Contains(t, e.Detail, "field is immutable", e.Field)
				}
			}
		})
	}
}

func TestMinAvailableImmutabilityComparesEffectiveValues(t *testing.T) {
	// An object stored before defaulting had no minAvailable; defaulting it to replicas on the
	// next update is not a change.
	oldPCS := validPCS()
	oldPCS.Spec.Template.Cliques[0].Spec.MinAvailable = nil
	oldPCS.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = nil
	newPCS := oldPCS.DeepCopy()
	corev1alpha1.SetDefaultsPodCliqueSet(newPCS)
	require.NotNil(t, newPCS.Spec.Template.Cliques[0].Spec.MinAvailable)
	_, errs := ValidatePodCliqueSetUpdate(newPCS, oldPCS)
	assert.Empty(t, errs)
}
