package webhook_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestCrossNamespaceTemplateNeedsTheAuthorsReadAccess: as a user who may only manage
// PodCliqueSets in their namespace, sharing a ResourceClaimTemplate of another namespace is
// refused at the entry's namespace, with the same message whether the template exists or not;
// once the user may read it, the same PodCliqueSet is admitted.
func TestCrossNamespaceTemplateNeedsTheAuthorsReadAccess(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	other := cluster.Shared.TestNamespace(t)
	require.NoError(t, e.client.Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "secret-gpu"},
		Spec: hostileClaimTemplate()}))
	user := "tenant-" + ns
	require.NoError(t, e.client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pcs-author"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{corev1alpha1.GroupName}, Resources: []string{"podcliquesets"}, Verbs: []string{"*"}}}}))
	require.NoError(t, e.client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pcs-author"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pcs-author"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}))
	cfg := rest.CopyConfig(cluster.Shared.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	tenant, err := client.New(cfg, client.Options{Scheme: newScheme()})
	require.NoError(t, err)

	sharing := func(name, template string) *corev1alpha1.PodCliqueSet {
		p := newPCS(ns, name)
		p.Spec.Template.Cliques[0].ResourceSharing = []corev1alpha1.ResourceSharingSpec{{Name: template, Namespace: other, Scope: corev1alpha1.ResourceSharingScopeAllReplicas}}
		return p
	}
	path := "spec.template.cliques[0].resourceSharing[0].namespace"
	errExisting := tenant.Create(ctx, sharing("exists", "secret-gpu"))
	requireInvalid(t, errExisting, path)
	errMissing := tenant.Create(ctx, sharing("missing", "no-such-gpu"))
	requireInvalid(t, errMissing, path)
	normalise := func(err error, pcs, template string) string {
		return strings.NewReplacer(pcs, "X", template, "T").Replace(err.Error())
	}
	assert.Equal(t, normalise(errExisting, "exists", "secret-gpu"), normalise(errMissing, "missing", "no-such-gpu"),
		"the refusal must not tell whether the template exists")
	assert.NotContains(t, errMissing.Error(), "not found")

	require.NoError(t, e.client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "read-templates"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{resourcev1.GroupName}, Resources: []string{"resourceclaimtemplates"}, Verbs: []string{"get"}}}}))
	require.NoError(t, e.client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "read-templates"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-templates"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}))
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, tenant.Create(ctx, sharing("allowed", "secret-gpu")))
	}, 10*time.Second, 200*time.Millisecond, "a template the author may read is admitted")
}

// TestGeneratedNameCollisionIsRefused: PodCliqueSet "x" with clique "w" in scaling group "g"
// wants PodClique "x-0-g-0-w", which PodCliqueSet "x-0-g" (clique "w") already has.
func TestGeneratedNameCollisionIsRefused(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	first := newPCS(ns, "x-0-g")
	first.Spec.Template.PodCliqueScalingGroupConfigs = nil
	first.Spec.Template.Cliques = first.Spec.Template.Cliques[:1]
	first.Spec.Template.Cliques[0].Name = "w"
	require.NoError(t, e.client.Create(ctx, first))
	// What grove-operator makes for it (no operator runs here).
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-0-g-0-w",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(first, corev1alpha1.SchemeGroupVersion.WithKind("PodCliqueSet"))}},
		Spec: corev1alpha1.PodCliqueSpec{RoleName: "router", Replicas: 1,
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
	require.NoError(t, e.client.Create(ctx, pclq))

	second := newPCS(ns, "x")
	second.Spec.Template.Cliques[1].Name = "w"
	second.Spec.Template.PodCliqueScalingGroupConfigs[0].Name = "g"
	second.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"w", "decode"}
	second.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](1)
	err := e.client.Create(ctx, second)
	requireInvalid(t, err, "spec.template.cliques[1].name")
	assert.Contains(t, err.Error(), "PodCliqueSet x-0-g")

	// Without the other object the same PodCliqueSet is fine.
	require.NoError(t, e.client.Delete(ctx, pclq))
	require.NoError(t, e.client.Create(ctx, second))
}

// TestPodCliqueCannotBeScaledBelowMinAvailable: /scale (kubectl scale pclq) and a spec update
// below minAvailable are refused with the replicas path; scaling up, and back down to
// minAvailable, are not.
func TestPodCliqueCannotBeScaledBelowMinAvailable(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-0-router"},
		Spec: corev1alpha1.PodCliqueSpec{RoleName: "router", Replicas: 2, MinAvailable: ptr.To[int32](2),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
	require.NoError(t, e.client.Create(ctx, pclq))
	scale := func(n int32) error {
		s := &autoscalingv1.Scale{}
		if err := e.client.SubResource("scale").Get(ctx, pclq, s); err != nil {
			return err
		}
		s.Spec.Replicas = n
		return e.client.SubResource("scale").Update(ctx, pclq, client.WithSubResourceBody(s))
	}
	for _, n := range []int32{0, 1} {
		err := scale(n)
		require.Error(t, err, "scale to %d", n)
		requireInvalid(t, err, "spec.replicas")
		assert.Contains(t, err.Error(), "must not be below minAvailable")
	}
	require.NoError(t, scale(3))
	require.NoError(t, scale(2))
	got := &corev1alpha1.PodClique{}
	require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(pclq), got))
	got.Spec.Replicas = 1
	requireInvalid(t, e.client.Update(ctx, got), "spec.replicas")
}

// TestUpdateWhosePodsTheApiserverRefusesIsRefused: an update whose new pods the apiserver
// would refuse is refused with the field path (a rolling update would otherwise replace healthy
// members with pods that never come); an update that leaves the pods alone is not dry-run.
func TestUpdateWhosePodsTheApiserverRefusesIsRefused(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	require.NoError(t, e.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	require.NoError(t, e.client.Create(ctx, newPCS(ns, "upd")))
	for _, tc := range []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		path   string
	}{
		{"priority", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Priority = ptr.To[int32](7)
		},
			"spec.template.cliques[0].spec.podSpec.priority"},
		{"missing PriorityClass", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.PriorityClassName = "gone" },
			"spec.template.priorityClassName"},
		{"missing RuntimeClass", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.RuntimeClassName = ptr.To("gone")
		},
			"spec.template.cliques[2].spec.podSpec.runtimeClassName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := &corev1alpha1.PodCliqueSet{}
			require.NoError(t, e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "upd"}, pcs))
			tc.mutate(pcs)
			requireInvalid(t, e.client.Update(ctx, pcs), tc.path)
		})
	}
	pcs := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "upd"}, pcs))
	pcs.Spec.Replicas = 2
	require.NoError(t, e.client.Update(ctx, pcs))
}

// TestServiceAccountCreatedAfterThePodCliqueSet: as NVIDIA Dynamo does, the ServiceAccount
// the pods name is created after the PodCliqueSet. It is admitted (with a warning); its
// PodCliques and the PodCliqueSet report PodCreateFailed with the apiserver's message and
// observedGeneration advances; the pods are created as soon as the ServiceAccount exists.
func TestServiceAccountCreatedAfterThePodCliqueSet(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	require.NoError(t, e.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	startOperatorIn(t, ns)
	pcs := newPCS(ns, "dyn")
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.ServiceAccountName = "dyn-sa"
	e.warnings.Take()
	require.NoError(t, e.client.Create(ctx, pcs))
	assert.Contains(t, strings.Join(e.warnings.Take(), "\n"), `ServiceAccount "dyn-sa" does not exist`)

	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		pclq := &corev1alpha1.PodClique{}
		require.NoError(c, e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dyn-0-router"}, pclq))
		cond := meta.FindStatusCondition(pclq.Status.Conditions, apicommon.ConditionPodCreateFailed)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionTrue, cond.Status)
		assert.Contains(c, cond.Message, "dyn-sa")
		assert.Equal(c, ptr.To(pclq.Generation), pclq.Status.ObservedGeneration)
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.client.Get(ctx, client.ObjectKeyFromObject(pcs), got))
		pc := meta.FindStatusCondition(got.Status.Conditions, apicommon.ConditionPodCreateFailed)
		require.NotNil(c, pc)
		assert.Equal(c, metav1.ConditionTrue, pc.Status)
		assert.Contains(c, pc.Message, "dyn-0-router")
	}, time.Minute, 250*time.Millisecond)

	require.NoError(t, e.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dyn-sa"}}))
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		ok, why, err := runnable(ctx, e.client, pcs)
		require.NoError(c, err)
		assert.True(c, ok, why)
		pclq := &corev1alpha1.PodClique{}
		require.NoError(c, e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dyn-0-router"}, pclq))
		assert.False(c, meta.IsStatusConditionTrue(pclq.Status.Conditions, apicommon.ConditionPodCreateFailed))
	}, 20*time.Second, 250*time.Millisecond, "the pods come within seconds of the ServiceAccount, not after a long backoff")
}

// TestClusterTopologyBindingIsValidatedAsItsClusterTopology: a binding whose ClusterTopology
// admission would refuse (a label key the binding's schema lets through) is refused with the
// binding's own field path; a binding of a
// scheduler that is not enabled is admitted, the entry ignored with a warning.
func TestClusterTopologyBindingIsValidatedAsItsClusterTopology(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	bad := &corev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "dup-" + ns},
		Spec: corev1alpha1.ClusterTopologyBindingSpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "example.com/" + strings.Repeat("k", 70)}}}}
	requireInvalid(t, e.client.Create(ctx, bad), "spec.levels[1].key")

	ok := &corev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "ignored-" + ns},
		Spec: corev1alpha1.ClusterTopologyBindingSpec{
			Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "example.com/rack"}},
			SchedulerTopologyBindings: []corev1alpha1.SchedulerTopologyBinding{
				{SchedulerName: "kai-scheduler", TopologyReference: "kai-topology"},
				{SchedulerName: "volcano", TopologyReference: "hypernodes"},
			}}}
	e.warnings.Take()
	require.NoError(t, e.client.Create(ctx, ok))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ok) })
	assert.Contains(t, strings.Join(e.warnings.Take(), "\n"), `spec.schedulerTopologyBindings[1]: scheduler "volcano" is not an enabled topology-aware scheduler backend`)

	dupKAI := ok.DeepCopy()
	dupKAI.ResourceVersion, dupKAI.Name = "", "dupkai-"+ns
	dupKAI.Spec.SchedulerTopologyBindings = append(dupKAI.Spec.SchedulerTopologyBindings, corev1alpha1.SchedulerTopologyBinding{SchedulerName: "kai-scheduler", TopologyReference: "other"})
	requireInvalid(t, e.client.Create(ctx, dupKAI), "spec.schedulerTopologyBindings")
}

// TestDryRunCost measures what the pod dry-run adds to admitting a PodCliqueSet with N cliques
// (the validator called directly, against the shared apiserver; median of 5). It asserts only
// that it stays well within the webhook's 10 s timeout.
func TestDryRunCost(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	require.NoError(t, e.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	registry, err := webhooktest.Registry(ctx, nil)
	require.NoError(t, err)
	with := &webhook.PodCliqueSetValidator{Reader: e.client, Backends: registry, TopologyAwareScheduling: true, Client: e.client}
	without := &webhook.PodCliqueSetValidator{Reader: e.client, Backends: registry, TopologyAwareScheduling: true}
	median := func(v *webhook.PodCliqueSetValidator, pcs *corev1alpha1.PodCliqueSet) time.Duration {
		var ds []time.Duration
		for range 5 {
			start := time.Now()
			_, err := v.ValidateCreate(ctx, pcs.DeepCopy())
			require.NoError(t, err)
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	for _, n := range []int{1, 4, 16, 64} {
		pcs := newPCS(ns, fmt.Sprintf("cost%d", n))
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = nil
		pcs.Spec.Template.Cliques = nil
		for i := range n {
			pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &corev1alpha1.PodCliqueTemplateSpec{Name: fmt.Sprintf("c%d", i),
				Spec: corev1alpha1.PodCliqueSpec{RoleName: fmt.Sprintf("c%d", i), Replicas: 1,
					PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}})
		}
		corev1alpha1.SetDefaultsPodCliqueSet(pcs)
		base, dry := median(without, pcs), median(with, pcs)
		t.Logf("%d cliques: admission %v without the dry-run, %v with it (+%v, %v per clique)", n, base, dry, dry-base, (dry-base)/time.Duration(n))
		assert.Less(t, dry, 4*time.Second)
	}
}
