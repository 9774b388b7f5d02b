package podcliqueset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// serviceAccounts keeps the ServiceAccount the PodCliqueSet's pods may run as.
type serviceAccounts struct{ r *Reconciler }

func (*serviceAccounts) Name() string { return "serviceaccount" }

func (c *serviceAccounts) Sync(ctx context.Context, st *state) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: apicommon.PodServiceAccountName(st.pcs.Name), Namespace: st.pcs.Namespace}}
	_, err := common.CreateOrPatch(ctx, c.r.Client, sa, func() error {
		sa.Labels = common.WithLabels(sa.Labels, common.ComponentLabels(st.pcs.Name, apicommon.ComponentPodServiceAccount))
		return controllerutil.SetControllerReference(st.stored, sa, c.r.Client.Scheme())
	})
	return err
}

func (c *serviceAccounts) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, nil, st.stored, &corev1.ServiceAccountList{}, apicommon.ComponentPodServiceAccount)
}

// roles keeps the Role that lets the pods of the PodCliqueSet read pods (peer discovery and the
// startup waiter, which reads the parent PodCliques' pods by label).
type roles struct{ r *Reconciler }

func (*roles) Name() string { return "role" }

func (c *roles) Sync(ctx context.Context, st *state) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: apicommon.PodRoleName(st.pcs.Name), Namespace: st.pcs.Namespace}}
	_, err := common.CreateOrPatch(ctx, c.r.Client, role, func() error {
		role.Labels = common.WithLabels(role.Labels, common.ComponentLabels(st.pcs.Name, apicommon.ComponentPodRole))
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}
		return controllerutil.SetControllerReference(st.stored, role, c.r.Client.Scheme())
	})
	return err
}

func (c *roles) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, nil, st.stored, &rbacv1.RoleList{}, apicommon.ComponentPodRole)
}

// roleBindings binds the Role to the ServiceAccount.
type roleBindings struct{ r *Reconciler }

func (*roleBindings) Name() string { return "rolebinding" }

func (c *roleBindings) Sync(ctx context.Context, st *state) error {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: apicommon.PodRoleBindingName(st.pcs.Name), Namespace: st.pcs.Namespace}}
	_, err := common.CreateOrPatch(ctx, c.r.Client, rb, func() error {
		rb.Labels = common.WithLabels(rb.Labels, common.ComponentLabels(st.pcs.Name, apicommon.ComponentPodRoleBinding))
		// roleRef is immutable; it is the same on every reconcile.
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: apicommon.PodRoleName(st.pcs.Name)}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: apicommon.PodServiceAccountName(st.pcs.Name), Namespace: st.pcs.Namespace}}
		return controllerutil.SetControllerReference(st.stored, rb, c.r.Client.Scheme())
	})
	return err
}

func (c *roleBindings) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, nil, st.stored, &rbacv1.RoleBindingList{}, apicommon.ComponentPodRoleBinding)
}

// startupWaiterTokens keeps the Secret that holds a token of the pods' ServiceAccount for the
// startup waiter. The waiter runs in every pod that starts after other cliques, whatever
// ServiceAccount the pod itself runs as, so it needs a token of its own: a
// service-account-token Secret, filled in by kube-controller-manager and mounted into the
// waiter container only. PodCliqueSets without startup ordering get none.
type startupWaiterTokens struct{ r *Reconciler }

func (*startupWaiterTokens) Name() string { return "startup-waiter-token" }

func (c *startupWaiterTokens) Sync(ctx context.Context, st *state) error {
	owned, err := listOwned(ctx, c.r.Client, st.stored, &corev1.SecretList{}, apicommon.ComponentStartupWaiterToken)
	if err != nil {
		return err
	}
	name := apicommon.StartupWaiterTokenSecretName(st.pcs.Name)
	ordered := ptr.Deref(st.pcs.Spec.Template.StartupType, corev1alpha1.CliqueStartupTypeAnyOrder) != corev1alpha1.CliqueStartupTypeAnyOrder
	if err := deleteUnwanted(ctx, c.r.Client, nil, owned, map[string]bool{name: ordered}); err != nil || !ordered {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: st.pcs.Namespace}}
	_, err = common.CreateOrPatch(ctx, c.r.Client, secret, func() error {
		secret.Labels = common.WithLabels(secret.Labels, common.ComponentLabels(st.pcs.Name, apicommon.ComponentStartupWaiterToken))
		// The token controller adds the token, the CA and the ServiceAccount's UID.
		secret.Annotations = common.WithLabels(secret.Annotations, map[string]string{corev1.ServiceAccountNameKey: apicommon.PodServiceAccountName(st.pcs.Name)})
		if secret.ResourceVersion == "" {
			secret.Type = corev1.SecretTypeServiceAccountToken
		}
		return controllerutil.SetControllerReference(st.stored, secret, c.r.Client.Scheme())
	})
	return err
}

func (c *startupWaiterTokens) Delete(ctx context.Context, st *state) error {
	return deleteOwned(ctx, c.r.Client, nil, st.stored, &corev1.SecretList{}, apicommon.ComponentStartupWaiterToken)
}
