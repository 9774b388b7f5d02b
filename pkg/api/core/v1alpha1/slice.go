package v1alpha1

// SliceConstraint splits the pods of a clique into slices that each land whole in one domain
// of a ClusterTopology level, every slice in a domain of its own, e.g. 32 pods on racks of 18
// nodes as two racks of 16. It sits on a clique-level topologyConstraint.
//
// Slice membership follows the pod index: slice 0 holds the lowest indexes, slice 1 the next
// ones, and so on (see SliceSizes). Each pod carries its slice in the grove.io/slice-index label
// and the GROVE_SLICE_INDEX, GROVE_SLICE_SIZE and GROVE_SLICE_COUNT variables.
// +kubebuilder:validation:XValidation:rule="has(self.maxSize) != has(self.size)",message="set exactly one of maxSize and size",reason=FieldValueRequired
type SliceConstraint struct {
	// Domain is the ClusterTopology level each slice lands whole in, e.g. rack. It must be
	// equal to or narrower than the level the clique is packed into.
	Domain TopologyDomain `json:"domain"`
	// MaxSize cuts the clique's pods into the fewest slices of at most maxSize pods whose
	// sizes differ by at most one: 32 pods with maxSize 16 are 16+16, 33 are 11+11+11.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxSize *int32 `json:"maxSize,omitempty"`
	// Size cuts the clique's pods into slices of exactly size pods; when the replicas are not
	// a multiple of size, the last slice holds the remainder (34 pods with size 16: 16+16+2).
	// +optional
	// +kubebuilder:validation:Minimum=1
	Size *int32 `json:"size,omitempty"`
	// WhenUnsatisfiable: DoNotSchedule (required, the default: the gang waits whole until every
	// slice has a domain) or ScheduleAnyway (preferred: slices are tried first, else the clique
	// is placed as plain packing would place it).
	// +optional
	// +kubebuilder:default=DoNotSchedule
	WhenUnsatisfiable SpreadAction `json:"whenUnsatisfiable,omitempty"`
}

// Required reports whether the slices are required (DoNotSchedule, the default).
func (c *SliceConstraint) Required() bool {
	return c.WhenUnsatisfiable != SpreadScheduleAnyway
}

// SliceSizes is how c cuts replicas pods, in pod index order; nil without pods or a valid
// size. With maxSize K the pods make ceil(replicas/K) slices whose sizes differ by at most one,
// the larger ones first; with size N they make slices of N, the last one holding the remainder.
func (c *SliceConstraint) SliceSizes(replicas int32) []int32 {
	if c == nil || replicas <= 0 {
		return nil
	}
	switch {
	case c.MaxSize != nil && *c.MaxSize >= 1:
		k := *c.MaxSize
		n := (replicas + k - 1) / k
		sizes := make([]int32, n)
		for i := range sizes {
			sizes[i] = replicas / n
			if int32(i) < replicas%n {
				sizes[i]++
			}
		}
		return sizes
	case c.Size != nil && *c.Size >= 1:
		var sizes []int32
		for left := replicas; left > 0; left -= *c.Size {
			sizes = append(sizes, min(left, *c.Size))
		}
		return sizes
	}
	return nil
}

// SliceOf returns the slice the pod with index podIndex belongs to under sizes (SliceSizes);
// ok is false when the index lies beyond them.
func SliceOf(sizes []int32, podIndex int) (index int, ok bool) {
	if podIndex < 0 {
		return 0, false
	}
	start := 0
	for i, s := range sizes {
		start += int(s)
		if podIndex < start {
			return i, true
		}
	}
	return 0, false
}
