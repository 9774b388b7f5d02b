package gangcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Which node updates count as room changes: the ones that can let a pod onto the node, not
// heartbeats.
func TestNodeRoomChanged(t *testing.T) {
	base := func() *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"rack": "r1"}},
			Spec:   v1.NodeSpec{Unschedulable: true, Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}}}
	}
	cases := []struct {
		name   string
		change func(*v1.Node)
		want   bool
	}{
		{"heartbeat", func(n *v1.Node) {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		}, false},
		{"annotation", func(n *v1.Node) { n.Annotations = map[string]string{"a": "b"} }, false},
		{"uncordoned", func(n *v1.Node) { n.Spec.Unschedulable = false }, true},
		{"cordoned", func(n *v1.Node) { n.Spec.Unschedulable = true }, false},
		{"taint removed", func(n *v1.Node) { n.Spec.Taints = nil }, true},
		{"label changed", func(n *v1.Node) { n.Labels["rack"] = "r2" }, true},
		{"allocatable grew", func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("8") }, true},
		{"allocatable shrank", func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("2") }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.change(n)
			assert.Equal(t, tc.want, NodeRoomChanged(base(), n))
		})
	}
	assert.True(t, NodeRoomChanged(nil, base()), "a new node")
}

// What an attempt learned holds until the room changes: ruled-out domains and failures.
func TestLessonsExpireWhenTheRoomChanges(t *testing.T) {
	c := New()
	d := RuledOut{Choice: placement.Choice{Key: "rack", Value: "r0"}, By: []string{"InterPodAffinity"}}
	assert.True(t, c.RuleOut("ns/g", "uid", d))
	assert.False(t, c.RuleOut("ns/g", "uid", d), "no news the second time")
	assert.Equal(t, []RuledOut{d}, c.RuledOutDomains("ns/g", "uid"))
	assert.Empty(t, c.RuledOutDomains("ns/g", "other-uid"), "a recreated PodGang starts afresh")
	c.SetRefused("ns/g")
	assert.True(t, c.RefusedSinceRoomChanged("ns/g"))
	assert.False(t, c.RefusedSinceRoomChanged("ns/other"))

	c.RoomChanged()
	assert.Empty(t, c.RuledOutDomains("ns/g", "uid"))
	assert.False(t, c.RefusedSinceRoomChanged("ns/g"))
	assert.True(t, c.RuleOut("ns/g", "uid", d), "news again after the room changed")
}

// Which device events count as room changes: the ones that can offer devices or free them.
func TestDeviceRoomChanged(t *testing.T) {
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{Driver: "d", NodeName: ptr.To("n1")}}
	moreDevices := slice.DeepCopy()
	moreDevices.Spec.Devices = []resourcev1.Device{{Name: "gpu-0"}}
	relabelled := slice.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	assert.True(t, SliceRoomChanged(nil, slice), "slice added")
	assert.True(t, SliceRoomChanged(slice, moreDevices), "devices changed")
	assert.False(t, SliceRoomChanged(slice, relabelled), "metadata only")
	assert.False(t, SliceRoomChanged(slice, nil), "slice deleted")

	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	widened := class.DeepCopy()
	widened.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "true"}}}
	annotated := class.DeepCopy()
	annotated.Annotations = map[string]string{"a": "b"}
	assert.True(t, ClassRoomChanged(nil, class), "class added")
	assert.True(t, ClassRoomChanged(class, widened), "selectors changed")
	assert.False(t, ClassRoomChanged(class, annotated), "metadata only")
	assert.False(t, ClassRoomChanged(class, nil), "class deleted")

	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	allocated := claim.DeepCopy()
	allocated.Status.Allocation = &resourcev1.AllocationResult{}
	assert.False(t, ClaimRoomChanged(nil, claim), "claim created")
	assert.False(t, ClaimRoomChanged(claim, allocated), "claim allocated")
	assert.True(t, ClaimRoomChanged(allocated, claim), "claim deallocated")
	assert.True(t, ClaimRoomChanged(allocated, nil), "allocated claim deleted")
	assert.False(t, ClaimRoomChanged(claim, nil), "unallocated claim deleted")
}
