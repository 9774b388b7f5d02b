package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestDefaultsAreAppliedOnCreate(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)

	pcs := newPCS(ns, "defaults")
	pcs.Spec.Template.Cliques[0].Spec.Replicas = 3
	pcs.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](1)
	pcs.Spec.Template.Cliques[1].Spec.Replicas = 2
	pcs.Spec.Template.Cliques[2].Spec.RoleName = ""
	pcs.Spec.Template.Cliques[2].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
	require.NoError(t, e.client.Create(ctx, pcs))

	got := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(pcs), got))
	tpl := got.Spec.Template
	assert.Equal(t, corev1alpha1.RollingRecreateStrategy, got.Spec.UpdateStrategy.Type)
	assert.Equal(t, corev1alpha1.CliqueStartupTypeAnyOrder, *tpl.StartupType)
	assert.Equal(t, corev1alpha1.DefaultTerminationDelay, tpl.TerminationDelay.Duration)
	assert.True(t, tpl.HeadlessServiceConfig.PublishNotReadyAddresses)

	router, prefill, decode := tpl.Cliques[0].Spec, tpl.Cliques[1].Spec, tpl.Cliques[2].Spec
	assert.EqualValues(t, 3, *router.MinAvailable, "minAvailable defaults to replicas")
	assert.EqualValues(t, 1, *prefill.MinAvailable, "an explicit minAvailable is kept")
	assert.EqualValues(t, 1, *decode.MinAvailable)
	assert.Equal(t, "decode", decode.RoleName)
	assert.Equal(t, corev1.RestartPolicyAlways, router.PodSpec.RestartPolicy)
	assert.Equal(t, corev1.RestartPolicyNever, decode.PodSpec.RestartPolicy)
	assert.EqualValues(t, corev1alpha1.DefaultTerminationGracePeriodSeconds, *router.PodSpec.TerminationGracePeriodSeconds)
	assert.EqualValues(t, 2, *tpl.PodCliqueScalingGroupConfigs[0].Replicas)
	assert.EqualValues(t, 1, *tpl.PodCliqueScalingGroupConfigs[0].MinAvailable)
}

func TestPodCliqueSetIsRejectedOnCreate(t *testing.T) {
	e := sharedEnv(t)
	ns := cluster.Shared.TestNamespace(t)
	longName := "p" + strings.Repeat("x", 40)
	rct := corev1alpha1.ResourceClaimTemplateConfig{Name: "gpus", TemplateSpec: resourcev1.ResourceClaimTemplateSpec{
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}}
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"duplicate role names", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.RoleName = "router" },
			[]string{"spec.template.cliques[1].spec.roleName"}},
		{"minAvailable above replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas = 2
			p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](3)
		}, []string{"spec.template.cliques[0].spec.minAvailable"}},
		{"autoscaler below minAvailable", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas = 2
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 4}
		}, []string{"spec.template.cliques[0].spec.autoScalingConfig.minReplicas"}},
		{"generated names too long", func(p *corev1alpha1.PodCliqueSet) { p.Name = longName },
			[]string{"spec.template.cliques[1].name", "spec.template.cliques[2].name"}},
		{"startsAfter names an unknown clique", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)
			p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"cache"}
		}, []string{"spec.template.cliques[0].spec.startsAfter[0]"}},
		{"startsAfter cycle", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeExplicit)
			p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"decode"}
			p.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"router"}
		}, []string{"spec.template.cliques[2].spec.startsAfter"}},
		{"clique in two scaling groups", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				corev1alpha1.PodCliqueScalingGroupConfig{Name: "more", CliqueNames: []string{"decode"}})
		}, []string{"spec.template.podCliqueScalingGroups[1].cliqueNames[0]"}},
		{"scaling group names an unknown clique", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill", "cache"}
		}, []string{"spec.template.podCliqueScalingGroups[0].cliqueNames[1]"}},
		{"scaling group minAvailable above replicas", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](3)
		}, []string{"spec.template.podCliqueScalingGroups[0].minAvailable"}},
		{"scaling-group member with its own autoscaler", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MaxReplicas: 3}
		}, []string{"spec.template.cliques[1].spec.autoScalingConfig"}},
		{"cliques on two schedulers", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.SchedulerName = "kai-scheduler"
		}, []string{"spec.template.cliques[1].spec.podSpec.schedulerName"}},
		{"scheduler not enabled", func(p *corev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = "koord-scheduler"
			}
		}, []string{"spec.template.cliques[0].spec.podSpec.schedulerName", "spec.template.cliques[2].spec.podSpec.schedulerName"}},
		{"resource sharing: duplicate, unknown filter child, namespace on an inline template", func(p *corev1alpha1.PodCliqueSet) {
			t := &p.Spec.Template
			t.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{rct}
			share := corev1alpha1.ResourceSharingSpec{Name: "gpus", Scope: corev1alpha1.ResourceSharingScopeAllReplicas}
			t.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: share,
				Filter: &corev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"nope"}}}}
			t.Cliques[0].ResourceSharing = []corev1alpha1.ResourceSharingSpec{share, share}
			nsShare := share
			nsShare.Namespace = "shared"
			t.PodCliqueScalingGroupConfigs[0].ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{{ResourceSharingSpec: nsShare}}
		}, []string{"spec.template.resourceSharing[0].filter.childScalingGroupNames[0]", "spec.template.cliques[0].resourceSharing[1].name",
			"spec.template.podCliqueScalingGroups[0].resourceSharing[0].namespace"}},
		{"resource sharing: empty filter", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{
				ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "external", Namespace: "shared", Scope: corev1alpha1.ResourceSharingScopePerReplica},
				Filter:              &corev1alpha1.PCSResourceSharingFilter{}}}
		}, []string{"spec.template.resourceSharing[0].filter"}},
	}
	// The CRD's own rules reject these before the webhook sees them.
	bySchema := map[string]bool{"minAvailable above replicas": true}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := newPCS(ns, "reject-"+string(rune('a'+i)))
			tc.mutate(pcs)
			err := e.client.Create(context.Background(), pcs)
			requireInvalid(t, err, tc.paths...)
			if !bySchema[tc.name] {
				assert.Contains(t, err.Error(), `admission webhook "pcs.validating.webhooks.grove.io" denied the request`)
			}
		})
	}

	// The same object without the mistakes is admitted: the rejections above are theirs.
	require.NoError(t, e.client.Create(context.Background(), newPCS(ns, "accepted")))
}

func TestImmutableFieldsAreRejectedOnUpdate(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	base := newPCS(ns, "immutable")
	base.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	require.NoError(t, e.client.Create(ctx, base))

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"add a clique", func(p *corev1alpha1.PodCliqueSet) {
			c := p.Spec.Template.Cliques[0].DeepCopy()
			c.Name, c.Spec.RoleName = "cache", "cache"
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, c)
		}, []string{"spec.template.cliques[3].name"}},
		{"reorder cliques with InOrder startup", func(p *corev1alpha1.PodCliqueSet) {
			c := p.Spec.Template.Cliques
			c[0], c[1] = c[1], c[0]
		}, []string{"spec.template.cliques[0].name", "spec.template.cliques[1].name"}},
		{"roleName", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.RoleName = "gateway" },
			[]string{"spec.template.cliques[0].spec.roleName"}},
		{"minAvailable", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](2) },
			[]string{"spec.template.cliques[0].spec.minAvailable"}},
		{"startsAfter", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"router"} },
			[]string{"spec.template.cliques[1].spec.startsAfter"}},
		{"schedulerName", func(p *corev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = "kai-scheduler"
			}
		}, []string{"spec.template.cliques[0].spec.podSpec.schedulerName"}},
		{"startup type", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeAnyOrder)
		}, []string{"spec.template.cliqueStartupType"}},
		{"scaling-group members", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill"}
		}, []string{"spec.template.podCliqueScalingGroups[0].cliqueNames"}},
		{"resource sharing", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing = []corev1alpha1.ResourceSharingSpec{{Name: "ext", Namespace: "shared", Scope: corev1alpha1.ResourceSharingScopePerReplica}}
		}, []string{"spec.template.cliques[0].resourceSharing"}},
		{"topology constraint", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "any", PackDomain: "rack"}
		}, []string{"spec.template.topologyConstraint"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := &corev1alpha1.PodCliqueSet{}
			require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(base), pcs))
			tc.mutate(pcs)
			requireInvalid(t, e.client.Update(ctx, pcs), tc.paths...)
		})
	}

	t.Run("mutable fields change", func(t *testing.T) {
		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(base), pcs))
		pcs.Spec.Replicas = 3
		pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:1.37"
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Hour}
		require.NoError(t, e.client.Update(ctx, pcs))
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(base), got))
		assert.EqualValues(t, 3, got.Spec.Replicas)
		assert.Equal(t, "busybox:1.37", got.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image)
	})
}

func TestTopologyAdmission(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-" + ns},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "zone", Key: "topology.kubernetes.io/zone"}, {Domain: "block", Key: "example.com/block"},
			{Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
	require.NoError(t, e.client.Create(ctx, ct))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })
	tc := func(name string, required, preferred corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{TopologyName: name, Pack: &corev1alpha1.TopologyPackConstraint{Required: required, Preferred: preferred}}
	}

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"ClusterTopology does not exist", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.TopologyConstraint = tc("missing", "rack", "") },
			[]string{"spec.template.topologyConstraint.topologyName"}},
		{"domain not in the ClusterTopology", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc(ct.Name, "region", "")
		}, []string{"spec.template.topologyConstraint.pack.required"}},
		{"scaling group broader than the PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc(ct.Name, "rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "block", "")
		}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"}},
		{"clique preferred broader than its group's", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc(ct.Name, "zone", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "", "rack")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "", "block")
		}, []string{"spec.template.cliques[2].topologyConstraint.pack.preferred"}},
		{"child names another topology", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc(ct.Name, "zone", "")
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("other", "host", "")
		}, []string{"spec.template.cliques[0].topologyConstraint.topologyName"}},
		{"default-scheduler cannot honour constraints", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc(ct.Name, "rack", "")
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = "default-scheduler"
			}
		}, []string{"spec.template.topologyConstraint.pack.required"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := newPCS(ns, "topo-"+string(rune('a'+i)))
			c.mutate(pcs)
			requireInvalid(t, e.client.Create(ctx, pcs), c.paths...)
		})
	}

	t.Run("valid hierarchy is admitted; preferred broader than required warns", func(t *testing.T) {
		pcs := newPCS(ns, "topo-valid")
		pcs.Spec.Template.TopologyConstraint = tc(ct.Name, "rack", "block")
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "rack", "host")
		pcs.Spec.Template.Cliques[1].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "host"}
		e.warnings.Take()
		require.NoError(t, e.client.Create(ctx, pcs))
		warnings := e.warnings.Take()
		require.Len(t, warnings, 1, "warnings: %v", warnings)
		assert.Contains(t, warnings[0], `spec.template.topologyConstraint: preferred domain "block" is broader than required domain "rack"`)
	})
}

func TestClusterTopologyAdmission(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	newCT := func(name string, refs ...corev1alpha1.SchedulerReference) *corev1alpha1.ClusterTopology {
		return &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ClusterTopologySpec{
			Levels:              []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"}},
			SchedulerReferences: refs,
		}}
	}
	notTopologyAware := newCT("ct-grove-ref", corev1alpha1.SchedulerReference{SchedulerName: "grove-scheduler", Reference: "x"})
	err := e.client.Create(ctx, notTopologyAware)
	requireInvalid(t, err, "spec.schedulerReferences[0].schedulerName")
	assert.Contains(t, err.Error(), `admission webhook "clustertopology.validating.webhooks.grove.io" denied the request`)
	assert.Contains(t, err.Error(), `supported values: "kai-scheduler"`)

	requireInvalid(t, e.client.Create(ctx, newCT("ct-disabled-ref", corev1alpha1.SchedulerReference{SchedulerName: "koord-scheduler", Reference: "x"})),
		"spec.schedulerReferences[0].schedulerName")

	ok := newCT("ct-kai-ref", corev1alpha1.SchedulerReference{SchedulerName: "kai-scheduler", Reference: "kai-topology"})
	require.NoError(t, e.client.Create(ctx, ok))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ok) })

	ok.Spec.SchedulerReferences = append(ok.Spec.SchedulerReferences, corev1alpha1.SchedulerReference{SchedulerName: "grove-scheduler", Reference: "x"})
	requireInvalid(t, e.client.Update(ctx, ok), "spec.schedulerReferences[1].schedulerName")
}

// TestTopologyAdmissionThroughABinding: a PodCliqueSet naming an upstream ClusterTopologyBinding
// is validated against the binding's levels even before grove-operator has made the
// ClusterTopology of it (a binding and a PodCliqueSet applied together).
func TestTopologyAdmissionThroughABinding(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	b := &corev1alpha1.ClusterTopologyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "binding-" + ns},
		Spec: corev1alpha1.ClusterTopologyBindingSpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "zone", Key: "topology.kubernetes.io/zone"}, {Domain: "rack", Key: "example.com/rack"},
		}},
	}
	require.NoError(t, e.client.Create(ctx, b))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), b) })

	bad := newPCS(ns, "via-binding-bad")
	bad.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: b.Name, Pack: &corev1alpha1.TopologyPackConstraint{Required: "host"}}
	requireInvalid(t, e.client.Create(ctx, bad), "spec.template.topologyConstraint.pack.required")

	good := newPCS(ns, "via-binding")
	good.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: b.Name, Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}}
	require.NoError(t, e.client.Create(ctx, good))
}
