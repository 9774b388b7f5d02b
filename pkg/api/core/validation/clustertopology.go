// Package validation holds checks of Grove core API objects that are shared by the operator's
// admission webhooks and its configuration loader.
package validation

import (
	"fmt"
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

// ValidateClusterTopologyBinding checks an upstream ClusterTopologyBinding as the
// ClusterTopology it is translated into is checked, with its field paths. Bindings of
// schedulers that are not enabled (not in enabled, the enabled topology-aware backends) are
// ignored, as upstream Grove ignores them: not refused, but named in warnings (and, by the
// controller, in the binding's condition).
func ValidateClusterTopologyBinding(b *corev1alpha1.ClusterTopologyBinding, enabled []string) (warnings []string, errs field.ErrorList) {
	sp := field.NewPath("spec")
	bp := sp.Child("schedulerTopologyBindings")
	spec, kept, ignored := b.ClusterTopologySpecFor(enabled)
	errs = ValidateTopologyLevels(spec.Levels, sp.Child("levels"))
	// Every entry must still be well formed, whether or not its scheduler runs here.
	for i, s := range b.Spec.SchedulerTopologyBindings {
		if s.SchedulerName == "" {
			errs = append(errs, field.Required(bp.Index(i).Child("schedulerName"), ""))
		}
		if s.TopologyReference == "" {
			errs = append(errs, field.Required(bp.Index(i).Child("topologyReference"), ""))
		}
	}
	seen := map[string]bool{}
	for _, i := range kept {
		name := b.Spec.SchedulerTopologyBindings[i].SchedulerName
		if seen[name] {
			errs = append(errs, field.Duplicate(bp.Index(i).Child("schedulerName"), name))
		}
		seen[name] = true
	}
	for _, i := range ignored {
		if name := b.Spec.SchedulerTopologyBindings[i].SchedulerName; name != "" {
			warnings = append(warnings, IgnoredBindingMessage(bp.Index(i), name, enabled))
		}
	}
	return warnings, errs
}

// IgnoredBindingMessage says that the binding entry at p is ignored.
func IgnoredBindingMessage(p *field.Path, scheduler string, enabled []string) string {
	return fmt.Sprintf("%s: scheduler %q is not an enabled topology-aware scheduler backend (enabled: %v); the entry is ignored", p, scheduler, enabled)
}
