package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultMaxUnavailable is rollingUpdate.maxUnavailable when left out (RollingRecreate and
// Coherent), as upstream Grove defaults it: one pod or group replica at a time.
const DefaultMaxUnavailable = 1

// IsRollingStrategy reports whether the operator drives the update itself (RollingRecreate or
// Coherent), so rollingUpdate settings apply.
func IsRollingStrategy(t UpdateStrategyType) bool {
	return t == "" || t == RollingRecreateStrategy || t == CoherentStrategy
}

// StrategyOf is the PodCliqueSet's update strategy, RollingRecreate when unset.
func StrategyOf(pcs *PodCliqueSet) UpdateStrategyType {
	if s := pcs.Spec.UpdateStrategy; s != nil && s.Type != "" {
		return s.Type
	}
	return RollingRecreateStrategy
}

// ResolveMaxUnavailable turns a component's maxUnavailable into a count for desired units:
// a percentage is rounded down, as a Deployment's maxUnavailable is, but never to 0, since
// Grove has no surge and a budget of 0 would never let the update start.
func ResolveMaxUnavailable(ru *RollingUpdateConfiguration, desired int32) int32 {
	if ru == nil || ru.MaxUnavailable == nil {
		return DefaultMaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(desired), false)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// defaultRollingUpdate fills maxUnavailable of a component under a rolling strategy. Under
// OnDelete nothing is added: validation refuses a rollingUpdate there instead of dropping it.
func defaultRollingUpdate(ru *RollingUpdateConfiguration, strategy UpdateStrategyType) *RollingUpdateConfiguration {
	if !IsRollingStrategy(strategy) {
		return ru
	}
	if ru == nil {
		ru = &RollingUpdateConfiguration{}
	}
	if ru.MaxUnavailable == nil {
		v := intstr.FromInt32(DefaultMaxUnavailable)
		ru.MaxUnavailable = &v
	}
	return ru
}
