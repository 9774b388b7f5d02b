package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TopologyLookup returns the ClusterTopology of that name, or nil (and no error) when it does
// not exist.
type TopologyLookup func(name string) (*corev1alpha1.ClusterTopology, error)

const rootWhat = "the PodCliqueSet"

// constraintRef is one topology constraint of a PodCliqueSet with where it sits.
type constraintRef struct {
	tc     *corev1alpha1.TopologyConstraint
	path   *field.Path
	parent *constraintRef
	what   string
}

func (c *constraintRef) requiredPath() *field.Path {
	if c.tc.Pack != nil && c.tc.Pack.Required != "" {
		return c.path.Child("pack", "required")
	}
	return c.path.Child("packDomain")
}

func (c *constraintRef) preferredPath() *field.Path { return c.path.Child("pack", "preferred") }

// topologyConstraints lists the constraints of a PodCliqueSet, parents before children: the
// PodCliqueSet's, then each scaling group's, then each clique's (whose parent is its scaling
// group's constraint when it has one).
func topologyConstraints(pcs *corev1alpha1.PodCliqueSet) []*constraintRef {
	t := &pcs.Spec.Template
	var refs []*constraintRef
	var root *constraintRef
	if t.TopologyConstraint != nil {
		root = &constraintRef{tc: t.TopologyConstraint, path: templatePath.Child("topologyConstraint"), what: rootWhat}
		refs = append(refs, root)
	}
	groups := map[string]*constraintRef{}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		if g.TopologyConstraint == nil {
			continue
		}
		r := &constraintRef{tc: g.TopologyConstraint, parent: root, what: fmt.Sprintf("scaling group %q", g.Name),
			path: templatePath.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint")}
		if _, dup := groups[g.Name]; !dup {
			groups[g.Name] = r
		}
		refs = append(refs, r)
	}
	for i, c := range t.Cliques {
		if c == nil || c.TopologyConstraint == nil {
			continue
		}
		parent := root
		if g := t.ScalingGroupOf(c.Name); g != nil && groups[g.Name] != nil {
			parent = groups[g.Name]
		}
		refs = append(refs, &constraintRef{tc: c.TopologyConstraint, parent: parent, what: fmt.Sprintf("clique %q", c.Name),
			path: templatePath.Child("cliques").Index(i).Child("topologyConstraint")})
	}
	return refs
}

// HasTopologyConstraints reports whether any level of the PodCliqueSet carries a constraint.
func HasTopologyConstraints(pcs *corev1alpha1.PodCliqueSet) bool {
	return len(topologyConstraints(pcs)) > 0
}

// EffectiveTopologyName is the ClusterTopology a PodCliqueSet's constraints refer to: the
// topologyName of its own constraint, else (when only scaling groups or cliques carry
// constraints) the first topologyName among those. Admission makes all of them agree.
func EffectiveTopologyName(pcs *corev1alpha1.PodCliqueSet) string {
	for _, r := range topologyConstraints(pcs) {
		if r.tc.TopologyName != "" {
			return r.tc.TopologyName
		}
	}
	return ""
}

// validateTopologyNames checks that the constraints name exactly one ClusterTopology. A
// constraint with an empty topologyName inherits its parent's; one without a parent that
// names a topology (the PodCliqueSet's own constraint, or a child's when the PodCliqueSet has
// none) must name it. A constraint that names it must name the same one.
func validateTopologyNames(refs []*constraintRef) (string, field.ErrorList) {
	var errs field.ErrorList
	name := ""
	for _, r := range refs {
		if r.tc.TopologyName != "" {
			name = r.tc.TopologyName
			break
		}
	}
	for _, r := range refs {
		np := r.path.Child("topologyName")
		switch {
		case r.tc.TopologyName == "" && inheritedTopologyName(r) == "":
			errs = append(errs, field.Required(np, "names the ClusterTopology whose domains the constraints use; it is inherited only from a parent constraint"))
		case r.tc.TopologyName != "" && r.tc.TopologyName != name:
			errs = append(errs, field.Invalid(np, r.tc.TopologyName,
				fmt.Sprintf("all constraints of a PodCliqueSet use one ClusterTopology (%q); leave it empty to inherit", name)))
		}
	}
	return name, errs
}

func inheritedTopologyName(r *constraintRef) string {
	for p := r.parent; p != nil; p = p.parent {
		if p.tc.TopologyName != "" {
			return p.tc.TopologyName
		}
	}
	return ""
}

// ValidateTopologyConstraints is topology admission of a new PodCliqueSet. With topology-aware
// scheduling disabled every constraint is rejected. Otherwise the named ClusterTopology must
// exist, every domain must be one of its levels, and no constraint may be broader than its
// parent's (required against required, preferred against preferred; level 0 is the broadest).
// A preferred domain broader than the required one of the same constraint is accepted with a
// warning: it has no effect. A lookup failure is reported as a field.ErrorTypeInternal error.
func ValidateTopologyConstraints(pcs *corev1alpha1.PodCliqueSet, tasEnabled bool, lookup TopologyLookup) (warnings []string, errs field.ErrorList) {
	refs := topologyConstraints(pcs)
	if len(refs) == 0 {
		return nil, nil
	}
	if !tasEnabled {
		for _, r := range refs {
			errs = append(errs, field.Forbidden(r.path, "topology constraints need topologyAwareScheduling.enabled in the operator configuration"))
		}
		return nil, errs
	}
	for _, r := range refs {
		// The PodCliqueSet's constraint may only name the topology its children's domains use.
		if !r.tc.HasDomain() && r.tc.Slice == nil && !(r.what == rootWhat && r.tc.TopologyName != "") {
			errs = append(errs, field.Required(r.path.Child("packDomain"), "a topology constraint needs a domain: set packDomain or pack"))
		}
	}
	name, nameErrs := validateTopologyNames(refs)
	errs = append(errs, nameErrs...)
	if len(errs) > 0 || name == "" {
		return nil, errs
	}
	namePath := refs[0].path.Child("topologyName")
	ct, err := lookup(name)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(namePath, fmt.Errorf("reading ClusterTopology %q: %w", name, err))}
	}
	if ct == nil {
		return nil, field.ErrorList{field.NotFound(namePath, name)}
	}
	levels := ct.Spec.Levels
	domains := make([]string, 0, len(levels))
	for _, l := range levels {
		domains = append(domains, string(l.Domain))
	}
	checkDomain := func(d corev1alpha1.TopologyDomain, p *field.Path) bool {
		if d == "" {
			return false
		}
		if ct.Spec.LevelIndex(d) < 0 {
			errs = append(errs, field.NotSupported(p, d, domains))
			return false
		}
		return true
	}
	for _, r := range refs {
		req, pref := r.tc.RequiredDomain(), r.tc.PreferredDomain()
		reqOK, prefOK := checkDomain(req, r.requiredPath()), checkDomain(pref, r.preferredPath())
		if reqOK && prefOK && ct.Spec.LevelIndex(pref) < ct.Spec.LevelIndex(req) {
			warnings = append(warnings, fmt.Sprintf("%s: preferred domain %q is broader than required domain %q and has no effect",
				r.path, pref, req))
		}
		if reqOK {
			if p := nearestAncestor(r, (*corev1alpha1.TopologyConstraint).RequiredDomain); p != nil {
				errs = append(errs, notBroader(ct, req, r.requiredPath(), p.tc.RequiredDomain(), p, "required")...)
			}
		}
		if prefOK {
			if p := nearestAncestor(r, (*corev1alpha1.TopologyConstraint).PreferredDomain); p != nil {
				errs = append(errs, notBroader(ct, pref, r.preferredPath(), p.tc.PreferredDomain(), p, "preferred")...)
			}
		}
	}
	errs = append(errs, validateReplicaSpread(refs, ct, domains)...)
	errs = append(errs, validateSlices(refs, ct, domains)...)
	roleWarnings, roleErrs := validateRoleAffinity(pcs, refs, ct, domains)
	return append(warnings, roleWarnings...), append(errs, roleErrs...)
}

func nearestAncestor(r *constraintRef, domain func(*corev1alpha1.TopologyConstraint) corev1alpha1.TopologyDomain) *constraintRef {
	for p := r.parent; p != nil; p = p.parent {
		if domain(p.tc) != "" {
			return p
		}
	}
	return nil
}

func notBroader(ct *corev1alpha1.ClusterTopology, child corev1alpha1.TopologyDomain, p *field.Path,
	parent corev1alpha1.TopologyDomain, parentRef *constraintRef, kind string) field.ErrorList {
	pi := ct.Spec.LevelIndex(parent)
	if pi < 0 || ct.Spec.LevelIndex(child) >= pi {
		return nil
	}
	return field.ErrorList{field.Invalid(p, child, fmt.Sprintf(
		"must not be broader than the %s domain %q of %s (%s) in ClusterTopology %q", kind, parent, parentRef.what, parentRef.path, ct.Name))}
}
