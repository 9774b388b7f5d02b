package devices

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func request(class string, count int64, selectors ...string) resourcev1.DeviceRequest {
	r := resourcev1.DeviceRequest{Name: "r", Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return r
}

func claim(name string, reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}}}
}

func TestNeedCountsEachUnallocatedClaimOnce(t *testing.T) {
	n := NewNeed()
	shared := claim("shared", request("gpu", 2))
	n.AddClaim(shared)
	n.AddClaim(shared) // a second sharer asks for nothing more
	n.AddClaim(claim("own", request("gpu", 1), request("nic", 0)))
	allocated := claim("done", request("gpu", 8))
	allocated.Status.Allocation = &resourcev1.AllocationResult{}
	n.AddClaim(allocated)
	all := claim("all", request("gpu", 0))
	all.Spec.Devices.Requests[0].Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	n.AddClaim(all)
	admin := claim("admin", request("gpu", 4))
	admin.Spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
	n.AddClaim(admin)
	n.AddClaim(claim("prioritized", resourcev1.DeviceRequest{Name: "r", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "gpu"}}}))
	n.AddClaim(claim("big", request("gpu", 1, `device.attributes["x"].mem > 1`, `device.driver == "d"`)))

	gpu, nic := Kind{Class: "gpu"}, Kind{Class: "nic"}
	big := Kind{Class: "gpu", Selectors: `(device.attributes["x"].mem > 1) && (device.driver == "d")`}
	assert.Equal(t, map[Kind]int64{gpu: 4, nic: 1, big: 1}, n.Count, "2 shared + 1 own + at least 1 for All")
	assert.Equal(t, []string{"shared", "own", "all"}, n.Claims[gpu])
	assert.Equal(t, []Kind{gpu, big, nic}, n.Kinds())
	assert.True(t, NewNeed().Empty())
}

func slice(name, pool string, generation int64, scope func(*resourcev1.ResourceSliceSpec), devices ...string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "drv", Pool: resourcev1.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: 1}}}
	scope(&s.Spec)
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: d})
	}
	return s
}

func onNode(n string) func(*resourcev1.ResourceSliceSpec) {
	return func(s *resourcev1.ResourceSliceSpec) { s.NodeName = &n }
}

func selecting(key, value string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: key, Operator: v1.NodeSelectorOpIn, Values: []string{value}}}}}}
}

func TestFromSlicesKeepsTheNewestPoolGenerationAndDeviceScopes(t *testing.T) {
	perDevice := slice("pd", "pd", 1, func(s *resourcev1.ResourceSliceSpec) { s.PerDeviceNodeSelection = ptr.To(true) }, "x", "y", "z")
	perDevice.Spec.Devices[0].NodeName = ptr.To("n9")
	perDevice.Spec.Devices[1].AllNodes = ptr.To(true)
	devs := FromSlices([]*resourcev1.ResourceSlice{
		slice("old", "n1", 1, onNode("n1"), "stale"),
		slice("new", "n1", 2, onNode("n1"), "gpu-0"),
		slice("rack", "rack", 1, func(s *resourcev1.ResourceSliceSpec) { s.NodeSelector = selecting("rack", "r2") }, "nic-0"),
		perDevice,
	})
	var got []string
	for _, d := range devs {
		scope := d.NodeName
		switch {
		case d.AllNodes:
			scope = "all"
		case d.NodeSelector != nil:
			scope = "selector"
		}
		got = append(got, d.ID+"@"+scope)
	}
	assert.Equal(t, []string{"drv/n1/gpu-0@n1", "drv/rack/nic-0@selector", "drv/pd/x@n9", "drv/pd/y@all"}, got,
		"the old generation is gone; a device without a scope is unusable")
}

func TestEvaluateCountsWhatEachDomainReaches(t *testing.T) {
	nodes := []Node{
		{Name: "a", Labels: map[string]string{"rack": "r1"}},
		{Name: "b", Labels: map[string]string{"rack": "r2"}},
		{Name: "c", Labels: map[string]string{"rack": "r2"}},
		{Name: "x"}, // no rack: in no rack domain
	}
	devs := FromSlices([]*resourcev1.ResourceSlice{
		slice("a", "a", 1, onNode("a"), "g0"),
		slice("b", "b", 1, onNode("b"), "g0", "g1"),
		slice("c", "c", 1, onNode("c"), "g0", "nic"),
		slice("x", "x", 1, onNode("x"), "g0"),
		slice("net", "net", 1, func(s *resourcev1.ResourceSliceSpec) { s.NodeSelector = selecting("rack", "r2") }, "g0"),
		slice("any", "any", 1, func(s *resourcev1.ResourceSliceSpec) { s.AllNodes = ptr.To(true) }, "nic"),
	})
	n := NewNeed()
	n.AddClaim(claim("c1", request("gpu", 4), request("nic", 1)))
	gpu, nic := Kind{Class: "gpu"}, Kind{Class: "nic"}
	match := func(k Kind, d *Device) bool { return (k.Class == "nic") == (d.Device.Name == "nic") }
	taken := map[string]bool{"drv/b/g1": true}
	free := func(id string) bool { return !taken[id] }

	doms := Evaluate("rack", nodes, devs, free, n, match)
	require.Len(t, doms, 2)
	assert.Equal(t, Domain{Value: "r1", Nodes: []string{"a"}, Offers: map[Kind]int64{gpu: 1, nic: 1}}, doms[0])
	assert.Equal(t, Domain{Value: "r2", Nodes: []string{"b", "c"}, Offers: map[Kind]int64{gpu: 3, nic: 2}}, doms[1],
		"b's free device, c's, the rack-wide one; c's nic and the everywhere nic")
	k, short := doms[1].Short(n)
	assert.True(t, short)
	assert.Equal(t, gpu, k)

	all := Evaluate("", nodes, devs, free, n, match)
	require.Len(t, all, 1)
	assert.Equal(t, map[Kind]int64{gpu: 5, nic: 2}, all[0].Offers)
	_, short = all[0].Short(n)
	assert.False(t, short)

	assert.Equal(t, []string{"b", "c"}, MatchingNodes(selecting("rack", "r2"), nodes))
}

type classes map[string]*resourcev1.DeviceClass

func (c classes) get(name string) (*resourcev1.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, name)
}

func TestCELMatcherAppliesClassAndRequestSelectors(t *testing.T) {
	class := func(expr string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}}}
	}
	m := CELMatcher(context.Background(), classes{
		"gpu":    class(`device.driver == "gpu.example.com"`),
		"broken": class(`device.driver ==`),
	}.get)
	dev := func(driver string, mem int64) *Device {
		return &Device{Driver: driver, Device: resourcev1.Device{Name: "d", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"mem": {IntValue: ptr.To(mem)}}}}
	}
	bigMem := fmt.Sprintf(`device.attributes[%q].mem >= 80`, "gpu.example.com")
	cases := []struct {
		kind Kind
		dev  *Device
		want bool
	}{
		{Kind{Class: "gpu"}, dev("gpu.example.com", 40), true},
		{Kind{Class: "gpu"}, dev("nic.example.com", 40), false},
		{Kind{Class: "gpu", Selectors: bigMem}, dev("gpu.example.com", 80), true},
		{Kind{Class: "gpu", Selectors: bigMem}, dev("gpu.example.com", 40), false},
		{Kind{Class: "missing"}, dev("gpu.example.com", 80), false},
		{Kind{Class: "broken"}, dev("gpu.example.com", 80), false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, m(tc.kind, tc.dev), "%s on %s mem %d", tc.kind, tc.dev.Driver, *tc.dev.Device.Attributes["mem"].IntValue)
	}
}
