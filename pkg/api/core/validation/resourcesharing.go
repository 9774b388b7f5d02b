package validation

import (
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

var sharingScopes = []corev1alpha1.ResourceSharingScope{corev1alpha1.ResourceSharingScopeAllReplicas, corev1alpha1.ResourceSharingScopePerReplica}

// validateResourceSharing checks DRA resource sharing at every level: inline
// templates are uniquely named and request devices; each resourceSharing list names a
// template at most once with a known scope; a name that refers to an inline template carries
// no namespace; filters are non-empty and name children of the level that declares them.
// A name that is not an inline template refers to an existing ResourceClaimTemplate (in
// namespace, or the PodCliqueSet's namespace) and is resolved by the controller.
func validateResourceSharing(t *corev1alpha1.PodCliqueSetTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	inline := sets.New[string]()
	tp := templatePath.Child("resourceClaimTemplates")
	for i, rct := range t.ResourceClaimTemplates {
		p := tp.Index(i)
		errs = append(errs, validateDNSLabel(rct.Name, p.Child("name"))...)
		if rct.Name != "" && inline.Has(rct.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), rct.Name))
		}
		inline.Insert(rct.Name)
		if len(rct.TemplateSpec.Spec.Devices.Requests) == 0 {
			errs = append(errs, field.Required(p.Child("templateSpec", "spec", "devices", "requests"), "a claim template must request at least one device"))
		}
	}

	cliques, groups := sets.New[string](), sets.New[string]()
	for _, c := range t.Cliques {
		if c != nil {
			cliques.Insert(c.Name)
		}
	}
	for _, g := range t.PodCliqueScalingGroupConfigs {
		groups.Insert(g.Name)
	}

	sp := templatePath.Child("resourceSharing")
	errs = append(errs, validateSharingList(t.ResourceSharing, func(s corev1alpha1.PCSResourceSharingSpec) corev1alpha1.ResourceSharingSpec {
		return s.ResourceSharingSpec
	}, inline, sp)...)
	for i, s := range t.ResourceSharing {
		if s.Filter == nil {
			continue
		}
		fp := sp.Index(i).Child("filter")
		if len(s.Filter.ChildCliqueNames) == 0 && len(s.Filter.ChildScalingGroupNames) == 0 {
			errs = append(errs, field.Required(fp, "a filter must name at least one child clique or scaling group; omit it to share with all children"))
		}
		errs = append(errs, namesMustExist(s.Filter.ChildCliqueNames, cliques, fp.Child("childCliqueNames"))...)
		errs = append(errs, namesMustExist(s.Filter.ChildScalingGroupNames, groups, fp.Child("childScalingGroupNames"))...)
	}

	for gi, g := range t.PodCliqueScalingGroupConfigs {
		gp := templatePath.Child("podCliqueScalingGroups").Index(gi).Child("resourceSharing")
		errs = append(errs, validateSharingList(g.ResourceSharing, func(s corev1alpha1.PCSGResourceSharingSpec) corev1alpha1.ResourceSharingSpec {
			return s.ResourceSharingSpec
		}, inline, gp)...)
		members := sets.New(g.CliqueNames...)
		for i, s := range g.ResourceSharing {
			if s.Filter == nil {
				continue
			}
			fp := gp.Index(i).Child("filter")
			if len(s.Filter.ChildCliqueNames) == 0 {
				errs = append(errs, field.Required(fp, "a filter must name at least one member clique; omit it to share with all members"))
			}
			for j, n := range s.Filter.ChildCliqueNames {
				if !members.Has(n) {
					errs = append(errs, field.NotSupported(fp.Child("childCliqueNames").Index(j), n, sets.List(members)))
				}
			}
		}
	}

	for ci, c := range t.Cliques {
		if c == nil {
			continue
		}
		errs = append(errs, validateSharingList(c.ResourceSharing, func(s corev1alpha1.ResourceSharingSpec) corev1alpha1.ResourceSharingSpec {
			return s
		}, inline, templatePath.Child("cliques").Index(ci).Child("resourceSharing"))...)
	}
	return errs
}

func validateSharingList[T any](list []T, base func(T) corev1alpha1.ResourceSharingSpec, inline sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, item := range list {
		s, ip := base(item), p.Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), "names a resourceClaimTemplates entry or an existing ResourceClaimTemplate"))
		} else if seen.Has(s.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), s.Name))
		}
		seen.Insert(s.Name)
		if s.Name != "" && (s.Namespace != "" || !inline.Has(s.Name)) {
			// It names a ResourceClaimTemplate object.
			for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), s.Name, msg+" (it names a ResourceClaimTemplate)"))
			}
		}
		if s.Namespace != "" {
			if inline.Has(s.Name) {
				errs = append(errs, field.Invalid(ip.Child("namespace"), s.Namespace,
					"must be empty: the name refers to an entry of spec.template.resourceClaimTemplates"))
			}
			for _, msg := range validation.IsDNS1123Label(s.Namespace) {
				errs = append(errs, field.Invalid(ip.Child("namespace"), s.Namespace, msg))
			}
		}
		if !slices.Contains(sharingScopes, s.Scope) {
			errs = append(errs, field.NotSupported(ip.Child("scope"), s.Scope, sharingScopes))
		}
	}
	return errs
}

func namesMustExist(names []string, known sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, n := range names {
		if !known.Has(n) {
			errs = append(errs, field.NotFound(p.Index(i), n))
		}
	}
	return errs
}

// validateClaimEntries refuses a pod-spec resourceClaims entry whose name is one grove-operator
// gives the entry of a shared claim (apicommon.PodResourceClaimName of "<pcs>-<i>[-...]-<template>",
// or its hashed short form): the operator skips its own entry when the name is taken, so the
// user's entry would silently stand in for the shared claim.
func validateClaimEntries(t *corev1alpha1.PodCliqueSetTemplateSpec, pcsName string, c *corev1alpha1.PodCliqueTemplateSpec, p *field.Path) field.ErrorList {
	templates := sets.New[string]()
	for _, s := range t.ResourceSharing {
		templates.Insert(s.Name)
	}
	for _, g := range t.PodCliqueScalingGroupConfigs {
		for _, s := range g.ResourceSharing {
			templates.Insert(s.Name)
		}
	}
	for _, s := range c.ResourceSharing {
		templates.Insert(s.Name)
	}
	if templates.Len() == 0 || pcsName == "" {
		return nil
	}
	var errs field.ErrorList
	for i, e := range c.Spec.PodSpec.ResourceClaims {
		if generatedClaimEntry(e.Name, pcsName, templates) {
			errs = append(errs, field.Invalid(p.Index(i).Child("name"), e.Name,
				"is the name grove-operator gives a claim of this PodCliqueSet's resourceSharing in the pod; choose another name"))
		}
	}
	return errs
}

var hashedClaimEntry = regexp.MustCompile(`(^|-)h[0-9a-f]{32}$`)

func generatedClaimEntry(name, pcsName string, templates sets.Set[string]) bool {
	if hashedClaimEntry.MatchString(name) {
		return true
	}
	rest, ok := strings.CutPrefix(name, pcsName+"-")
	if !ok || rest == "" || rest[0] < '0' || rest[0] > '9' {
		return false
	}
	for tmpl := range templates {
		if strings.HasSuffix(rest, "-"+tmpl) {
			return true
		}
	}
	return false
}
