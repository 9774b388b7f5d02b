package v1alpha1

// PodGroupSlices splits a PodGroup's pods into slices that each lie within one value of a node
// label key, every slice in a value of its own, while the group keeps its pack constraints.
// A pod's slice is the value of its grove.io/slice-index label (0, 1, ...); grove-operator sets
// it from the pod index when it creates the pod.
type PodGroupSlices struct {
	// TopologyKey is the node label key whose values are the slices' domains.
	// +kubebuilder:validation:MinLength=1
	TopologyKey string `json:"topologyKey"`
	// Required: the gang waits until every slice has a domain. Otherwise the scheduler tries
	// slices first and places the group as its pack constraints alone would when they do not fit.
	// +optional
	Required bool `json:"required,omitempty"`
	// Sizes are the pods of each slice, by slice index.
	// +kubebuilder:validation:MinItems=1
	Sizes []int32 `json:"sizes"`
}
