package validation

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// validateRollingUpdates checks the rollingUpdate of each standalone clique and scaling group:
// a budget of at least 1 (or a percentage above 0 and at most 100), a positive deadline, none
// on a scaling group's member cliques (the group's governs them) and none under OnDelete,
// where the operator replaces nothing itself.
func validateRollingUpdates(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	t := &pcs.Spec.Template
	rolling := corev1alpha1.IsRollingStrategy(corev1alpha1.StrategyOf(pcs))
	check := func(ru *corev1alpha1.RollingUpdateConfiguration, p *field.Path) {
		if ru == nil {
			return
		}
		if !rolling {
			errs = append(errs, field.Forbidden(p, "must not be set with updateStrategy.type OnDelete: the operator replaces no pods itself"))
			return
		}
		errs = append(errs, validateMaxUnavailable(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		if d := ru.ProgressDeadline; d != nil && d.Duration <= 0 {
			errs = append(errs, field.Invalid(p.Child("progressDeadline"), d.Duration.String(), "must be a positive duration, e.g. 30s, 15m or 4h"))
		}
	}
	for i, c := range t.Cliques {
		if c == nil || c.RollingUpdate == nil {
			continue
		}
		p := templatePath.Child("cliques").Index(i).Child("rollingUpdate")
		if g := t.ScalingGroupOf(c.Name); g != nil {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("clique %q is a member of scaling group %q, whose rollingUpdate governs it", c.Name, g.Name)))
			continue
		}
		check(c.RollingUpdate, p)
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		check(t.PodCliqueScalingGroupConfigs[i].RollingUpdate, templatePath.Child("podCliqueScalingGroups").Index(i).Child("rollingUpdate"))
	}
	return errs
}

func validateMaxUnavailable(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return field.ErrorList{field.Invalid(p, v.IntVal, "must be at least 1: with no surge, 0 would never let the update start")}
		}
		return nil
	}
	s, ok := strings.CutSuffix(v.StrVal, "%")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 1 || n > 100 {
		return field.ErrorList{field.Invalid(p, v.StrVal, "must be an integer of at least 1 or a percentage from 1% to 100%")}
	}
	return nil
}
