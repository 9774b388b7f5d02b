// Package validation holds checks of Grove core API objects that are shared by the operator's
// admission webhooks and its configuration loader.
package validation

import (
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// MaxTopologyLevels is the most levels a ClusterTopology may have.
const MaxTopologyLevels = 16

var domainPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// ValidateTopologyLevels checks count, domain syntax, key syntax and uniqueness of levels.
func ValidateTopologyLevels(levels []corev1alpha1.TopologyLevel, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(levels) == 0 {
		errs = append(errs, field.Required(p, "at least one level is needed"))
	}
	if len(levels) > MaxTopologyLevels {
		errs = append(errs, field.TooMany(p, len(levels), MaxTopologyLevels))
	}
	domains, keys := map[corev1alpha1.TopologyDomain]bool{}, map[string]bool{}
	for i, l := range levels {
		lp := p.Index(i)
		if !domainPattern.MatchString(string(l.Domain)) || len(l.Domain) > 63 {
			errs = append(errs, field.Invalid(lp.Child("domain"), l.Domain, "must match ^[a-z][a-z0-9-]*$ and be at most 63 characters"))
		}
		for _, msg := range validation.IsQualifiedName(l.Key) {
			errs = append(errs, field.Invalid(lp.Child("key"), l.Key, msg))
		}
		if domains[l.Domain] {
			errs = append(errs, field.Duplicate(lp.Child("domain"), l.Domain))
		}
		if keys[l.Key] {
			errs = append(errs, field.Duplicate(lp.Child("key"), l.Key))
		}
		domains[l.Domain], keys[l.Key] = true, true
	}
	return errs
}

// ValidateSchedulerReferences checks that each scheduler is referenced once with a name.
func ValidateSchedulerReferences(refs []corev1alpha1.SchedulerReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range refs {
		rp := p.Index(i)
		if r.SchedulerName == "" {
			errs = append(errs, field.Required(rp.Child("schedulerName"), ""))
		}
		if r.Reference == "" {
			errs = append(errs, field.Required(rp.Child("reference"), ""))
		}
		if seen[r.SchedulerName] {
			errs = append(errs, field.Duplicate(rp.Child("schedulerName"), r.SchedulerName))
		}
		seen[r.SchedulerName] = true
	}
	return errs
}

// ValidateClusterTopology checks a ClusterTopology: its levels, and that its scheduler
// references name each enabled topology-aware scheduler backend at most once. enabled lists
// the schedulers that may be referenced.
func ValidateClusterTopology(ct *corev1alpha1.ClusterTopology, enabled []string) field.ErrorList {
	return validateClusterTopology(ct, enabled, nil)
}

// ValidateClusterTopologyUpdate is ValidateClusterTopology for an update: a reference that the
// old object already had is kept even when its backend has since been disabled, so that
// unrelated changes to the topology stay possible.
func ValidateClusterTopologyUpdate(newCT, oldCT *corev1alpha1.ClusterTopology, enabled []string) field.ErrorList {
	existing := map[string]bool{}
	for _, r := range oldCT.Spec.SchedulerReferences {
		existing[r.SchedulerName] = true
	}
	return validateClusterTopology(newCT, enabled, existing)
}

func validateClusterTopology(ct *corev1alpha1.ClusterTopology, enabled []string, tolerated map[string]bool) field.ErrorList {
	sp := field.NewPath("spec")
	errs := ValidateTopologyLevels(ct.Spec.Levels, sp.Child("levels"))
	rp := sp.Child("schedulerReferences")
	errs = append(errs, ValidateSchedulerReferences(ct.Spec.SchedulerReferences, rp)...)
	for i, r := range ct.Spec.SchedulerReferences {
		if r.SchedulerName == "" || slices.Contains(enabled, r.SchedulerName) || tolerated[r.SchedulerName] {
			continue
		}
		errs = append(errs, field.NotSupported(rp.Index(i).Child("schedulerName"), r.SchedulerName, enabled))
	}
	return errs
}
