package gangcache

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ai-dynamo/grove/plugins/internal/nodes"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// Room changes. What the scheduler learned by failing — that a gang's domain is rejected by a
// filter, that a gang ahead of others does not fit after all — holds until the cluster changes
// in a way that can add room: a node added or opened (labels, taints, allocatable,
// unschedulable), a pod holding a node deleted, or devices offered (a ResourceSlice or
// DeviceClass added or changed, a claim's allocation released). The room version counts those
// changes, bumped by the gang cache's informers and, so that no requeued member can be tried
// before the bump, by the queueing hints that requeue members for such an event;
// lessons are recorded with the version they were learned at and expire when it moves. Without
// this, gangs that could not be placed woke each other up in a loop (issue 39: hundreds of
// attempts a second per stuck pod).

// RoomVersion is the number of room changes seen so far.
func (c *Cache) RoomVersion() uint64 { return c.room.Load() }

// RoomChanged records a change that may add room.
func (c *Cache) RoomChanged() { c.room.Add(1) }

// NodeRoomChanged reports whether a node update may add room for some pod: the node is new, or
// its labels, taints, unschedulable flag changed or its allocatable grew. Heartbeats and
// condition updates do not.
func NodeRoomChanged(oldNode, newNode *v1.Node) bool {
	if oldNode == nil {
		return true
	}
	return oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable || !maps.Equal(oldNode.Labels, newNode.Labels) ||
		!equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) || nodes.AllocatableGrew(oldNode, newNode)
}

// SliceRoomChanged reports whether a ResourceSlice event may offer devices: a new slice, or one
// whose spec (devices, node, pool) changed.
func SliceRoomChanged(oldSlice, newSlice *resourcev1.ResourceSlice) bool {
	return newSlice != nil && (oldSlice == nil || !equality.Semantic.DeepEqual(oldSlice.Spec, newSlice.Spec))
}

// ClassRoomChanged reports whether a DeviceClass event may match more devices: a new class, or
// one whose spec (selectors, config) changed.
func ClassRoomChanged(oldClass, newClass *resourcev1.DeviceClass) bool {
	return newClass != nil && (oldClass == nil || !equality.Semantic.DeepEqual(oldClass.Spec, newClass.Spec))
}

// ClaimRoomChanged reports whether a ResourceClaim event freed devices: an allocated claim
// deallocated or deleted.
func ClaimRoomChanged(oldClaim, newClaim *resourcev1.ResourceClaim) bool {
	return oldClaim != nil && oldClaim.Status.Allocation != nil && (newClaim == nil || newClaim.Status.Allocation == nil)
}

// RuledOut is a domain a filter plugin rejected for a gang's members although counted
// capacity said it held them.
type RuledOut struct {
	placement.Choice
	// By names the filter plugins that rejected its nodes.
	By []string
}

// ruledOut is a gang's record of RuledOut domains, learned at one room version.
type ruledOut struct {
	uid     types.UID
	version uint64
	domains []RuledOut
}

// RuleOut records that a filter rejected every node of domain c for a member of PodGang uid. It
// reports whether this is news (the domain was not ruled out at this room version yet).
func (c *Cache) RuleOut(key string, uid types.UID, d RuledOut) bool {
	version := c.RoomVersion()
	news := false
	c.update(key, true, func(e *entry) {
		r := &e.ruledOut
		if r.uid != uid || r.version != version {
			*r = ruledOut{uid: uid, version: version}
		}
		if slices.ContainsFunc(r.domains, func(x RuledOut) bool { return x.Choice == d.Choice }) {
			return
		}
		r.domains = append(r.domains, d)
		news = true
	})
	return news
}

// RuledOutDomains lists the domains ruled out for PodGang uid since the room last changed.
func (c *Cache) RuledOutDomains(key string, uid types.UID) []RuledOut {
	version := c.RoomVersion()
	var out []RuledOut
	c.view(key, func(e *entry) {
		if e.ruledOut.uid == uid && e.ruledOut.version == version {
			out = slices.Clone(e.ruledOut.domains)
		}
	})
	return out
}

// SetRefused records that a filter plugin refused gang key (although counted capacity held
// it), with the cluster's room at its current version.
func (c *Cache) SetRefused(key string) {
	version := c.RoomVersion()
	c.update(key, true, func(e *entry) { e.refusedAt, e.refused = version, true })
}

// RefusedSinceRoomChanged reports whether a filter refused gang key since the room last
// changed: until it does, counted capacity saying it fits means nothing. (A gang that failed
// for lack of room is not told apart this way: the scheduler's snapshot may show a change a
// moment after the room version moved, and such a gang must keep its claim on the room.)
func (c *Cache) RefusedSinceRoomChanged(key string) bool {
	version := c.RoomVersion()
	refused := false
	c.view(key, func(e *entry) { refused = e.refused && e.refusedAt == version })
	return refused
}
