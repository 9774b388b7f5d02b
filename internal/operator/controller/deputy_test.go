package controller_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// The tests here act as a tenant: a user who may manage PodCliqueSets in one namespace and
// nothing else (the shipped grove-edit role, bound in that namespace). Whatever the tenant's
// PodCliqueSet is named, grove-operator must not use its own rights on objects the tenant could
// not touch: another team's ServiceAccount, Service, Role, RoleBinding, autoscaler or Grove
// objects of another owner are never adopted, changed, bound to or deleted.

// tenant is a client acting as a user bound to grove-edit in the env's namespace only.
func (e *env) tenant() client.Client {
	e.t.Helper()
	root, err := cluster.ModuleRoot()
	require.NoError(e.t, err)
	require.NoError(e.t, e.cluster.Apply(e.ctx, filepath.Join(root, "config", "rbac", "user-roles.yaml")))
	user := "tenant-of-" + e.ns
	e.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "tenant-edits-grove"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "grove-edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	cfg := rest.CopyConfig(e.cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: e.c.Scheme()})
	require.NoError(e.t, err)
	// The tenant may do nothing else: RBAC is in force for it (the binding has taken effect
	// once it may list PodCliqueSets).
	e.eventually(func(c2 *assert.CollectT) {
		require.NoError(c2, c.List(e.ctx, &corev1alpha1.PodCliqueSetList{}, client.InNamespace(e.ns)))
	})
	err = c.List(e.ctx, &corev1.ServiceAccountList{}, client.InNamespace(e.ns))
	require.True(e.t, apierrors.IsForbidden(err), "the tenant may not read ServiceAccounts: %v", err)
	return c
}

// nameConflict waits for the PodCliqueSet's NameConflict condition to name every one of objects
// ("Kind namespace/name (name from field)") and returns it.
func (e *env) nameConflict(pcs string, objects ...string) *metav1.Condition {
	e.t.Helper()
	var cond *metav1.Condition
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: pcs}, got))
		cond = condition(got.Status.Conditions, apicommon.ConditionNameConflict)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionTrue, cond.Status)
		assert.Equal(c, apicommon.ReasonChildNameConflict, cond.Reason)
		for _, o := range objects {
			assert.Contains(c, cond.Message, o)
		}
	}, "the PodCliqueSet reports the names held by objects Grove did not create")
	assert.Positive(e.t, e.eventCount(apicommon.ReasonChildNameConflict), "and a Warning event says so")
	return cond
}

// deleteAsTenant deletes the PodCliqueSet as the tenant and waits until it is gone (the
// operator's finalizer has run every delete path).
func (e *env) deleteAsTenant(tenant client.Client, pcs *corev1alpha1.PodCliqueSet) {
	e.t.Helper()
	require.NoError(e.t, tenant.Delete(e.ctx, pcs))
	e.eventually(func(c *assert.CollectT) {
		err := e.c.Get(e.ctx, client.ObjectKeyFromObject(pcs), &corev1alpha1.PodCliqueSet{})
		assert.True(c, apierrors.IsNotFound(err), "PodCliqueSet still there: %v", err)
	})
}

// untouched checks that obj (as created by someone else) is still there, the same object
// (UID), owned by no one, with its labels, and never written to (resourceVersion).
func (e *env) untouched(t require.TestingT, obj client.Object) {
	got := e.notAdopted(t, obj)
	assert.Equal(t, obj.GetResourceVersion(), got.GetResourceVersion(), "%T %s was written to", obj, obj.GetName())
}

// notAdopted is untouched for Grove's own kinds, whose controllers do keep the finalizer and
// status of every object of their kind: it is still there, owned by no one, with its labels.
func (e *env) notAdopted(t require.TestingT, obj client.Object) client.Object {
	got := obj.DeepCopyObject().(client.Object)
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(obj), got), "%T %s is gone", obj, obj.GetName())
	assert.Equal(t, obj.GetUID(), got.GetUID(), "%T %s was replaced", obj, obj.GetName())
	assert.Empty(t, got.GetOwnerReferences(), "%T %s was adopted", obj, obj.GetName())
	assert.Equal(t, obj.GetLabels(), got.GetLabels(), "%T %s was relabelled", obj, obj.GetName())
	return got
}

// sameSpec checks that a PodClique and a PodCliqueScalingGroup of someone else keep their spec.
func (e *env) sameSpec(t require.TestingT, pclq *corev1alpha1.PodClique, pcsg *corev1alpha1.PodCliqueScalingGroup) {
	gotClq := e.notAdopted(t, pclq).(*corev1alpha1.PodClique)
	assert.Equal(t, pclq.Spec.RoleName, gotClq.Spec.RoleName)
	assert.Equal(t, pclq.Spec.Replicas, gotClq.Spec.Replicas)
	gotSG := e.notAdopted(t, pcsg).(*corev1alpha1.PodCliqueScalingGroup)
	assert.Equal(t, pcsg.Spec.CliqueNames, gotSG.Spec.CliqueNames)
	assert.Equal(t, pcsg.Spec.Replicas, gotSG.Spec.Replicas)
}

// bindingsOf are the RoleBindings of the namespace that name ServiceAccount sa.
func (e *env) bindingsOf(sa string) []string {
	e.t.Helper()
	list := &rbacv1.RoleBindingList{}
	require.NoError(e.t, e.c.List(e.ctx, list, client.InNamespace(e.ns)))
	var out []string
	for _, rb := range list.Items {
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa {
				out = append(out, rb.Name)
			}
		}
	}
	return out
}

// orderedPCS is the disaggregated PodCliqueSet with InOrder startup: the workers' pods run the
// startup waiter, which needs a ServiceAccount allowed to read pods.
func orderedPCS(ns, name string) *corev1alpha1.PodCliqueSet {
	pcs := disaggregated(ns, name, 1)
	pcs.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	return pcs
}

// TestTenantCannotTakeOverAnotherTeamsServiceAccountAndService: another team's ServiceAccount
// "victim" may read Secrets, and their Service "victim-0" selects their pods. A tenant applies a
// PodCliqueSet named victim with InOrder startup. The ServiceAccount gets no Grove owner or
// label, no RoleBinding of Grove's names it, no token Secret of it is made and no pod runs as
// it; the Service keeps its selector; the PodCliqueSet reports both names (condition and
// event); deleting the PodCliqueSet leaves both.
func TestTenantCannotTakeOverAnotherTeamsServiceAccountAndService(t *testing.T) {
	e := newEnv(t)
	tenant := e.tenant()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "victim", Labels: map[string]string{"team": "other"}}}
	e.create(sa)
	e.create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "read-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}})
	e.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "victim-reads-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-secrets"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: "victim"}}})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "victim-0", Labels: map[string]string{"team": "other"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	e.create(svc)

	pcs := orderedPCS(e.ns, "victim")
	require.NoError(t, tenant.Create(e.ctx, pcs))
	cond := e.nameConflict("victim", "ServiceAccount "+e.ns+"/victim (name from metadata.name)", "Service "+e.ns+"/victim-0 (name from metadata.name)")
	t.Log(cond.Message)
	e.eventually(func(c *assert.CollectT) {
		assert.NotEmpty(c, e.pods("victim-0-router"), "the rest of the PodCliqueSet is made")
	})

	e.untouched(t, sa)
	e.untouched(t, svc)
	assert.Equal(t, []string{"victim-reads-secrets"}, e.bindingsOf("victim"), "Grove binds nothing to another team's ServiceAccount")
	secrets := &corev1.SecretList{}
	require.NoError(t, e.c.List(e.ctx, secrets, client.InNamespace(e.ns)))
	assert.Empty(t, secrets.Items, "no token Secret of the ServiceAccount (nor any other)")
	for _, p := range e.pods("") {
		assert.NotEqual(t, "victim", p.Spec.ServiceAccountName, "pod %s runs as another team's ServiceAccount", p.Name)
	}
	assert.Empty(t, e.pods("victim-0-workers-0-prefill"), "pods that would run the startup waiter as that ServiceAccount are not made")

	e.deleteAsTenant(tenant, pcs)
	e.untouched(t, sa)
	e.untouched(t, svc)
	assert.Equal(t, []string{"victim-reads-secrets"}, e.bindingsOf("victim"))
}

// TestPodCliqueSetNamedDefaultLeavesTheDefaultServiceAccount: a PodCliqueSet named "default"
// must not adopt the namespace's default ServiceAccount, bind it, or delete it with the
// PodCliqueSet (which would invalidate every token bound to it: it comes back with a new UID).
func TestPodCliqueSetNamedDefaultLeavesTheDefaultServiceAccount(t *testing.T) {
	e := newEnv(t)
	tenant := e.tenant()
	def := &corev1.ServiceAccount{}
	e.eventually(func(c *assert.CollectT) {
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "default"}, def))
	}, "kube-controller-manager makes the default ServiceAccount")

	pcs := orderedPCS(e.ns, "default")
	require.NoError(t, tenant.Create(e.ctx, pcs))
	e.nameConflict("default", "ServiceAccount "+e.ns+"/default (name from metadata.name)")
	e.untouched(t, def)
	assert.Empty(t, e.bindingsOf("default"))

	e.deleteAsTenant(tenant, pcs)
	e.untouched(t, def)
}

// TestTenantCannotTakeOverOtherChildren: objects of every other kind Grove makes for a
// PodCliqueSet exist under the names it would use, made by someone else: the pods' Role and
// RoleBinding, a PodClique, a PodCliqueScalingGroup and a HorizontalPodAutoscaler. None is
// adopted, changed or deleted (with the PodCliqueSet), and the PodCliqueSet names each with the
// field its name comes from.
func TestTenantCannotTakeOverOtherChildren(t *testing.T) {
	e := newEnv(t)
	tenant := e.tenant()
	theirs := map[string]string{"team": "other"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: apicommon.PodRoleName("x"), Labels: theirs},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: apicommon.PodRoleBindingName("x"), Labels: theirs},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: apicommon.PodRoleName("x")},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "someone"}}}
	// Grove's own labels but no controller reference: labels alone do not make it Grove's.
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "x-0-router",
		Labels: map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "x",
			apicommon.LabelComponentKey: apicommon.ComponentPCSPodClique}},
		Spec: corev1alpha1.PodCliqueSpec{RoleName: "theirs", Replicas: 0, PodSpec: podSpec()}}
	pcsg := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "x-0-workers", Labels: theirs},
		Spec: corev1alpha1.PodCliqueScalingGroupSpec{Replicas: 1, CliqueNames: []string{"theirs"}}}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "x-0-router", Labels: theirs},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 2,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "theirs"}}}
	for _, o := range []client.Object{role, binding, pclq, pcsg, hpa} {
		e.create(o)
	}

	pcs := disaggregated(e.ns, "x", 1)
	pcs.Spec.Template.Clique("router").Spec.ScaleConfig = &corev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 3}
	require.NoError(t, tenant.Create(e.ctx, pcs))
	e.nameConflict("x",
		"Role "+e.ns+"/grove.io:pcs:x (name from metadata.name)",
		"RoleBinding "+e.ns+"/grove.io:pcs:x (name from metadata.name)",
		"PodClique "+e.ns+"/x-0-router (name from spec.template.cliques[0].name)",
		"PodCliqueScalingGroup "+e.ns+"/x-0-workers (name from spec.template.podCliqueScalingGroups[0].name)",
		"HorizontalPodAutoscaler "+e.ns+"/x-0-router (name from spec.template.cliques[0].name)")
	for _, o := range []client.Object{role, binding, hpa} {
		e.untouched(t, o)
	}
	e.sameSpec(t, pclq, pcsg)
	assert.Empty(t, e.pods("x-0-router"), "no pod of a PodClique Grove did not create")

	e.deleteAsTenant(tenant, pcs)
	for _, o := range []client.Object{role, binding, hpa} {
		e.untouched(t, o)
	}
	e.sameSpec(t, pclq, pcsg)
}

// TestNameConflictClearsOnceTheNameIsFree: the conflict is reported while it lasts (here a
// Service and a scaling group's member PodClique); once the other objects are gone, Grove makes
// its own and the condition turns False.
func TestNameConflictClearsOnceTheNameIsFree(t *testing.T) {
	e := newEnv(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "free-0"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	e.create(svc)
	member := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "free-0-workers-1-decode"},
		Spec: corev1alpha1.PodCliqueSpec{RoleName: "theirs", Replicas: 0, PodSpec: podSpec()}}
	e.create(member)
	e.create(disaggregated(e.ns, "free", 1))
	e.nameConflict("free", "Service "+e.ns+"/free-0",
		"PodClique "+e.ns+"/free-0-workers-1-decode (name from spec.template.podCliqueScalingGroups[0].name, spec.template.cliques[2].name)")
	e.notAdopted(t, member)
	require.NoError(t, e.c.Delete(e.ctx, svc))
	require.NoError(t, e.c.Delete(e.ctx, member))
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "free"}, got))
		cond := condition(got.Status.Conditions, apicommon.ConditionNameConflict)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		mine := &corev1.Service{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "free-0"}, mine))
		ref := metav1.GetControllerOf(mine)
		require.NotNil(c, ref)
		assert.Equal(c, got.UID, ref.UID)
		assert.True(c, strings.HasPrefix(mine.Spec.ClusterIP, "None"), "Grove's headless Service")
		assert.NotEmpty(c, e.pods("free-0-workers-1-decode"), "Grove's member PodClique")
	})
}
