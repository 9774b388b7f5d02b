package podcliqueset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// serviceAccounts keeps the ServiceAccount the startup waiter authenticates as: the pods of a
// clique that starts after others and names no ServiceAccount of its own run as it. Its name is
// the PodCliqueSet's, so another team's ServiceAccount of that name (or the namespace's
// default one) is a name conflict: it is left alone, nothing is bound to it and no pod runs as
// it.
type serviceAccounts struct{ r *Reconciler }

func (*serviceAccounts) Name() string { return "serviceaccount" }

func (c *serviceAccounts) Sync(ctx context.Context, st *state) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: apicommon.PodServiceAccountName(st.pcs.Name), Namespace: st.pcs.Namespace}}
	_, err := common.CreateOrPatch(ctx, c.r.Client, serviceAccountChild(st.stored), sa, func() error { return nil })
	if _, taken := common.AsNameConflict(err); taken {
		st.serviceAccountTaken = true
	}
	return st.conflict(err)
}

func serviceAccountChild(pcs *corev1alpha1.PodCliqueSet) common.Child {
	return child(pcs, apicommon.ComponentPodServiceAccount, "metadata.name")
}

func (c *serviceAccounts) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &corev1.ServiceAccountList{}, apicommon.ComponentPodServiceAccount)
}

// roles keeps the Role that lets the pods of the PodCliqueSet read pods (peer discovery and the
// startup waiter, which reads the parent PodCliques' pods by label).
type roles struct{ r *Reconciler }

func (*roles) Name() string { return "role" }

func (c *roles) Sync(ctx context.Context, st *state) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: apicommon.PodRoleName(st.pcs.Name), Namespace: st.pcs.Namespace}}
	_, err := common.CreateOrPatch(ctx, c.r.Client, child(st.stored, apicommon.ComponentPodRole, "metadata.name"), role, func() error {
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}
		return nil
	})
	return st.conflict(err)
}

func (c *roles) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &rbacv1.RoleList{}, apicommon.ComponentPodRole)
}

// roleBindings binds the Role to the ServiceAccount, only while that ServiceAccount is Grove's:
// a binding names its subject by name, and binding another team's ServiceAccount would grant it
// rights a PodCliqueSet author chose.
type roleBindings struct{ r *Reconciler }

func (*roleBindings) Name() string { return "rolebinding" }

func (c *roleBindings) Sync(ctx context.Context, st *state) error {
	if st.serviceAccountTaken {
		return c.Delete(ctx, st)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: apicommon.PodRoleBindingName(st.pcs.Name), Namespace: st.pcs.Namespace}}
	_, err := common.CreateOrPatch(ctx, c.r.Client, child(st.stored, apicommon.ComponentPodRoleBinding, "metadata.name"), rb, func() error {
		// roleRef is immutable; it is the same on every reconcile.
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: apicommon.PodRoleName(st.pcs.Name)}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: apicommon.PodServiceAccountName(st.pcs.Name), Namespace: st.pcs.Namespace}}
		return nil
	})
	return st.conflict(err)
}

func (c *roleBindings) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, st.stored, &rbacv1.RoleBindingList{}, apicommon.ComponentPodRoleBinding)
}
