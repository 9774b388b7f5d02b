package common

// Slices of a clique (topologyConstraint.slice): grove-operator puts these on every pod of a
// sliced clique when it creates the pod; grove-scheduler reads the label to keep each member in
// its slice's domain.
const (
	// LabelSliceIndex is the pod's slice (0, 1, ...), decided by its pod index.
	LabelSliceIndex = "grove.io/slice-index"
	// EnvSliceIndex is the pod's slice (the value of LabelSliceIndex).
	EnvSliceIndex = "GROVE_SLICE_INDEX"
	// EnvSliceSize is the number of pods in the pod's slice.
	EnvSliceSize = "GROVE_SLICE_SIZE"
	// EnvSliceCount is the number of slices of the pod's clique.
	EnvSliceCount = "GROVE_SLICE_COUNT"
	// ReasonSliceUnsatisfiable: the gang's pack domains hold its pods, but not each slice of a
	// sliced PodGroup within a domain of its own (a required topologyConstraint.slice).
	ReasonSliceUnsatisfiable = "SliceUnsatisfiable"
)
