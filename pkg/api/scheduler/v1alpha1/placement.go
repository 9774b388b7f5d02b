package v1alpha1

// PodGangPlacement is where a gang was placed, as the scheduler last saw its quorum bound.
type PodGangPlacement struct {
	// Nodes the gang's bound members ran on, sorted.
	// +optional
	// +listType=set
	Nodes []string `json:"nodes,omitempty"`
}
