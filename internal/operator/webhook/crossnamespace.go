package webhook

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Cross-namespace ResourceClaimTemplates.
//
// A resourceSharing entry with a namespace other than the PodCliqueSet's makes grove-operator
// read that namespace's ResourceClaimTemplate and copy its spec into claims in the
// PodCliqueSet's namespace. The operator may read every namespace; the author may not. So the
// author must be allowed to get that ResourceClaimTemplate themselves: admission asks the
// apiserver (a SubjectAccessReview for the requesting user, groups and extra) and refuses the
// entry otherwise. The template itself is not looked up for a user who may not read it, and
// the refusal reads the same whether it exists or not: it is no existence oracle.

// crossNamespaceEntry is one resourceSharing entry naming another namespace.
type crossNamespaceEntry struct {
	spec corev1alpha1.ResourceSharingSpec
	path *field.Path
}

func crossNamespaceEntries(pcs *corev1alpha1.PodCliqueSet) []crossNamespaceEntry {
	var out []crossNamespaceEntry
	tp := field.NewPath("spec", "template")
	add := func(s corev1alpha1.ResourceSharingSpec, p *field.Path) {
		if s.Namespace != "" && s.Namespace != pcs.Namespace {
			out = append(out, crossNamespaceEntry{s, p})
		}
	}
	t := &pcs.Spec.Template
	for i, s := range t.ResourceSharing {
		add(s.ResourceSharingSpec, tp.Child("resourceSharing").Index(i))
	}
	for gi, g := range t.PodCliqueScalingGroupConfigs {
		for i, s := range g.ResourceSharing {
			add(s.ResourceSharingSpec, tp.Child("podCliqueScalingGroups").Index(gi).Child("resourceSharing").Index(i))
		}
	}
	for ci, c := range t.Cliques {
		if c == nil {
			continue
		}
		for i, s := range c.ResourceSharing {
			add(s, tp.Child("cliques").Index(ci).Child("resourceSharing").Index(i))
		}
	}
	return out
}

// authorizeCrossNamespace refuses every entry whose ResourceClaimTemplate the requesting user
// may not get. resourceSharing is immutable, so this runs on create only.
func (v *PodCliqueSetValidator) authorizeCrossNamespace(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	entries := crossNamespaceEntries(pcs)
	if len(entries) == 0 || v.Client == nil {
		return nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return field.ErrorList{field.InternalError(entries[0].path, fmt.Errorf("no admission request to authorize: %w", err))}
	}
	u := req.UserInfo
	extra := map[string]authorizationv1.ExtraValue{}
	for k, vals := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(vals)
	}
	var errs field.ErrorList
	for _, e := range entries {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: e.spec.Namespace,
				Verb:      "get",
				Group:     resourcev1.GroupName,
				Resource:  "resourceclaimtemplates",
				Name:      e.spec.Name,
			},
		}}
		if err := v.Client.Create(ctx, sar); err != nil {
			errs = append(errs, field.InternalError(e.path.Child("namespace"), fmt.Errorf("could not check access to ResourceClaimTemplates in namespace %s: %w", e.spec.Namespace, err)))
			continue
		}
		if !sar.Status.Allowed {
			errs = append(errs, field.Forbidden(e.path.Child("namespace"), fmt.Sprintf(
				"%q may not get ResourceClaimTemplate %q in namespace %q: a PodCliqueSet may only share a template of another namespace that its author can read",
				u.Username, e.spec.Name, e.spec.Namespace)))
		}
	}
	return errs
}
