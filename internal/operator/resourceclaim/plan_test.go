package resourceclaim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func share(name string, scope corev1alpha1.ResourceSharingScope) corev1alpha1.ResourceSharingSpec {
	return corev1alpha1.ResourceSharingSpec{Name: name, Scope: scope}
}

const (
	all = corev1alpha1.ResourceSharingScopeAllReplicas
	per = corev1alpha1.ResourceSharingScopePerReplica
)

// sharingPCS: standalone "router" and "frontend", scaling group "workers" of "prefill" and
// "decode". PodCliqueSet entries: "fabric" (AllReplicas, to router and the workers group),
// "mem" (PerReplica, to every clique). Group entry: "nic" (PerReplica, to decode only), "pool"
// (AllReplicas, no filter). Clique entries on decode: "gpu" (PerReplica), "mps" (AllReplicas).
func sharingPCS() *corev1alpha1.PodCliqueSet {
	clique := func(n string) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: n, Spec: corev1alpha1.PodCliqueSpec{RoleName: n}}
	}
	decode := clique("decode")
	decode.ResourceSharing = []corev1alpha1.ResourceSharingSpec{share("gpu", per), share("mps", all)}
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ns"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("router"), clique("frontend"), clique("prefill"), decode},
			ResourceSharing: []corev1alpha1.PCSResourceSharingSpec{
				{ResourceSharingSpec: share("fabric", all), Filter: &corev1alpha1.PCSResourceSharingFilter{
					ChildCliqueNames: []string{"router"}, ChildScalingGroupNames: []string{"workers"}}},
				{ResourceSharingSpec: share("mem", per)},
			},
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{
				Name: "workers", CliqueNames: []string{"prefill", "decode"},
				ResourceSharing: []corev1alpha1.PCSGResourceSharingSpec{
					{ResourceSharingSpec: share("nic", per), Filter: &corev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"decode"}}},
					{ResourceSharingSpec: share("pool", all)},
				},
			}},
		}},
	}
}

func pclq(name string, labels map[string]string) *corev1alpha1.PodClique {
	return &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
}

func TestPodClaimsFollowLevelsAndFilters(t *testing.T) {
	pcs := sharingPCS()
	cases := []struct {
		name   string
		pclq   *corev1alpha1.PodClique
		pod    int
		claims []string
	}{
		{"standalone clique named by the filter", pclq("llm-1-router", map[string]string{"grove.io/podcliqueset-replica-index": "1"}), 0,
			[]string{"llm-all-fabric", "llm-1-mem"}},
		{"standalone clique outside the filter", pclq("llm-0-frontend", map[string]string{"grove.io/podcliqueset-replica-index": "0"}), 3,
			[]string{"llm-0-mem"}},
		{"member outside the group filter", pclq("llm-1-workers-2-prefill", map[string]string{
			"grove.io/podcliqueset-replica-index": "1", "grove.io/podcliquescalinggroup": "llm-1-workers", "grove.io/podcliquescalinggroup-replica-index": "2"}), 0,
			[]string{"llm-all-fabric", "llm-1-mem", "llm-1-workers-all-pool"}},
		{"member with clique-level entries", pclq("llm-0-workers-1-decode", map[string]string{
			"grove.io/podcliqueset-replica-index": "0", "grove.io/podcliquescalinggroup": "llm-0-workers", "grove.io/podcliquescalinggroup-replica-index": "1"}), 4,
			[]string{"llm-all-fabric", "llm-0-mem", "llm-0-workers-1-nic", "llm-0-workers-all-pool", "llm-0-workers-1-decode-4-gpu", "llm-0-workers-1-decode-all-mps"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claims, err := ForPodClique(pcs, tc.pclq)
			require.NoError(t, err)
			assert.Equal(t, tc.claims, claims.ForPod(tc.pod))
		})
	}
}

func TestLocateRejectsPodCliquesTheTemplateDoesNotHave(t *testing.T) {
	pcs := sharingPCS()
	for _, p := range []*corev1alpha1.PodClique{
		pclq("llm-0-router", nil), // no replica label
		pclq("llm-0-cache", map[string]string{"grove.io/podcliqueset-replica-index": "0"}),
		pclq("llm-0-prefill", map[string]string{"grove.io/podcliqueset-replica-index": "0"}), // member named as standalone
		pclq("llm-0-other-0-decode", map[string]string{
			"grove.io/podcliqueset-replica-index": "0", "grove.io/podcliquescalinggroup": "llm-0-other", "grove.io/podcliquescalinggroup-replica-index": "0"}),
	} {
		_, err := Locate(pcs, p)
		assert.Error(t, err, p.Name)
	}
}

func TestInjectReferencesClaimsFromEveryContainer(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "main"}, {Name: "sidecar"}},
		ResourceClaims: []corev1.PodResourceClaim{{Name: "user", ResourceClaimTemplateName: ptrTo("own")}},
	}
	spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "user"}}
	long := "a-very-long-podcliqueset-name-0-workers-12-decode-all-gpu-partitions"
	Inject(spec, []string{"llm-all-fabric", long})
	Inject(spec, []string{"llm-all-fabric", long}) // idempotent

	require.Len(t, spec.ResourceClaims, 3)
	assert.Equal(t, "user", spec.ResourceClaims[0].Name, "the pod's own claims are kept")
	assert.Equal(t, "llm-all-fabric", spec.ResourceClaims[1].Name)
	assert.Equal(t, "llm-all-fabric", *spec.ResourceClaims[1].ResourceClaimName)
	longEntry := spec.ResourceClaims[2].Name
	assert.LessOrEqual(t, len(longEntry), 63, "pod claim entry names are DNS labels")
	assert.Equal(t, long, *spec.ResourceClaims[2].ResourceClaimName)

	names := func(c corev1.Container) []string {
		var out []string
		for _, r := range c.Resources.Claims {
			out = append(out, r.Name)
		}
		return out
	}
	assert.Equal(t, []string{"user", "llm-all-fabric", longEntry}, names(spec.Containers[0]))
	assert.Equal(t, []string{"llm-all-fabric", longEntry}, names(spec.Containers[1]))
	assert.Equal(t, []string{"llm-all-fabric", longEntry}, names(spec.InitContainers[0]))
}

func TestLabelsNameOwnerTemplateAndReplica(t *testing.T) {
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by":          "grove-operator",
		"app.kubernetes.io/part-of":             "llm",
		"app.kubernetes.io/component":           "resource-claim",
		"grove.io/resource-claim-owner-kind":    "PodClique",
		"grove.io/resource-claim-owner-name":    "llm-0-router",
		"grove.io/resource-claim-template":      "gpu",
		"grove.io/resource-claim-replica-index": "3",
	}, Labels("llm", OwnerKindPodClique, "llm-0-router", share("gpu", per), 3))
	l := Labels("llm", OwnerKindPodCliqueSet, "llm", share("fabric", all), 3)
	assert.NotContains(t, l, "grove.io/resource-claim-replica-index", "an AllReplicas claim has no replica")
}

func TestDeclared(t *testing.T) {
	assert.True(t, Declared(&sharingPCS().Spec.Template))
	onlyClique := sharingPCS()
	onlyClique.Spec.Template.ResourceSharing = nil
	onlyClique.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = nil
	assert.True(t, Declared(&onlyClique.Spec.Template))
	onlyClique.Spec.Template.Cliques[3].ResourceSharing = nil
	assert.False(t, Declared(&onlyClique.Spec.Template))
}

func ptrTo[T any](v T) *T { return &v }
