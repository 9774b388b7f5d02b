package validation

import (
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// validateSlices checks the slice of every constraint against the ClusterTopology: slices cut a
// clique's pods, so they sit on clique-level constraints only; the domain is a level of the
// topology no broader than the domain the clique is packed into (its own, else the nearest
// enclosing one; required before preferred): a slice cannot be wider than the gang it cuts.
func validateSlices(refs []*constraintRef, ct *corev1alpha1.ClusterTopology, domains []string) field.ErrorList {
	var errs field.ErrorList
	for _, r := range refs {
		sl := r.tc.Slice
		if sl == nil {
			continue
		}
		sp := r.path.Child("slice")
		if !strings.HasPrefix(r.what, "clique ") {
			errs = append(errs, field.Forbidden(sp, "slices cut the pods of one clique: set them on the clique-level topologyConstraint (spec.template.cliques[].topologyConstraint)"))
			continue
		}
		errs = append(errs, validateSliceSize(sl, sp)...)
		dp := sp.Child("domain")
		level := ct.Spec.LevelIndex(sl.Domain)
		if level < 0 {
			errs = append(errs, field.NotSupported(dp, sl.Domain, domains))
			continue
		}
		if pack, owner, packPath := packDomainOf(r); pack != "" && ct.Spec.LevelIndex(pack) >= 0 && level < ct.Spec.LevelIndex(pack) {
			errs = append(errs, field.Invalid(dp, sl.Domain, fmt.Sprintf(
				"must be equal to or narrower than the domain %q %s is packed into (%s) in ClusterTopology %q", pack, owner.what, packPath, ct.Name)))
		}
	}
	return errs
}

// validateSliceSize: exactly one of maxSize and size, at least 1 (the schema says so too; the
// webhook repeats it for clusters whose CRDs predate the rule).
func validateSliceSize(sl *corev1alpha1.SliceConstraint, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case sl.MaxSize == nil && sl.Size == nil:
		errs = append(errs, field.Required(sp.Child("maxSize"), "set exactly one of maxSize and size"))
	case sl.MaxSize != nil && sl.Size != nil:
		errs = append(errs, field.Forbidden(sp.Child("size"), "set exactly one of maxSize and size"))
	}
	if sl.MaxSize != nil && *sl.MaxSize < 1 {
		errs = append(errs, field.Invalid(sp.Child("maxSize"), *sl.MaxSize, "must be at least 1"))
	}
	if sl.Size != nil && *sl.Size < 1 {
		errs = append(errs, field.Invalid(sp.Child("size"), *sl.Size, "must be at least 1"))
	}
	if a := sl.WhenUnsatisfiable; a != "" && a != corev1alpha1.SpreadDoNotSchedule && a != corev1alpha1.SpreadScheduleAnyway {
		errs = append(errs, field.NotSupported(sp.Child("whenUnsatisfiable"), a,
			[]string{string(corev1alpha1.SpreadDoNotSchedule), string(corev1alpha1.SpreadScheduleAnyway)}))
	}
	return errs
}

// packDomainOf is the domain the clique of r is packed into: the required domain of r or of its
// nearest ancestor that has one, else the preferred one likewise; "" when none.
func packDomainOf(r *constraintRef) (corev1alpha1.TopologyDomain, *constraintRef, *field.Path) {
	for _, pick := range []struct {
		domain func(*corev1alpha1.TopologyConstraint) corev1alpha1.TopologyDomain
		path   func(*constraintRef) *field.Path
	}{{(*corev1alpha1.TopologyConstraint).RequiredDomain, (*constraintRef).requiredPath},
		{(*corev1alpha1.TopologyConstraint).PreferredDomain, (*constraintRef).preferredPath}} {
		for c := r; c != nil; c = c.parent {
			if d := pick.domain(c.tc); d != "" {
				return d, c, pick.path(c)
			}
		}
	}
	return "", nil, nil
}

// sameSlice: the repairs of an update (immutableTopology) never change the slice.
func sameSlice(a, b *corev1alpha1.TopologyConstraint) bool {
	var x, y *corev1alpha1.SliceConstraint
	if a != nil {
		x = a.Slice
	}
	if b != nil {
		y = b.Slice
	}
	return apiequality.Semantic.DeepEqual(x, y)
}
