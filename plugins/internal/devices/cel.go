package devices

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// celCacheSize bounds the compiled expressions kept (class and request selectors).
const celCacheSize = 256

// CELMatcher matches a device against its kind's device class selectors and the request's own
// selectors, as the allocator does. classOf looks a DeviceClass up; a class that does not exist
// matches nothing. An expression that fails to compile or evaluate does not match.
func CELMatcher(ctx context.Context, classOf func(name string) (*resourcev1.DeviceClass, error)) Matcher {
	cache := dracel.NewCache(celCacheSize, dracel.Features{})
	matches := func(expr string, d *Device) bool {
		res := cache.GetOrCompile(expr)
		if res.Error != nil {
			return false
		}
		ok, _, err := res.DeviceMatches(ctx, dracel.Device{Driver: d.Driver, Attributes: d.Device.Attributes, Capacity: d.Device.Capacity})
		return err == nil && ok
	}
	return func(k Kind, d *Device) bool {
		class, err := classOf(k.Class)
		if err != nil || class == nil {
			return false
		}
		for _, s := range class.Spec.Selectors {
			if s.CEL != nil && !matches(s.CEL.Expression, d) {
				return false
			}
		}
		return k.Selectors == "" || matches(k.Selectors, d)
	}
}
