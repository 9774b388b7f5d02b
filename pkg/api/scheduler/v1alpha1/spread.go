package v1alpha1

// ReplicaSpreadConstraint spreads the PodGangs of a spread group over the values of a node
// label key. PodGangs that name the same member (the PodGangs of one PodCliqueSet replica)
// count as one: they may share a value, and together they occupy every value their pods use.
type ReplicaSpreadConstraint struct {
	// Group names the PodGangs, in the PodGang's namespace, that spread against each other. The
	// operator uses the PodCliqueSet's name.
	// +kubebuilder:validation:MinLength=1
	Group string `json:"group"`
	// Member names the replica the PodGang belongs to. The operator uses the name of the
	// PodCliqueSet replica's base PodGang.
	// +kubebuilder:validation:MinLength=1
	Member string `json:"member"`
	// TopologyKey is the node label key whose values are the domains.
	// +kubebuilder:validation:MinLength=1
	TopologyKey string `json:"topologyKey"`
	// Required: no two members share a value; a member with no value of its own left waits.
	// Otherwise members go where fewest members are, within MaxSkew while they can.
	// +optional
	Required bool `json:"required,omitempty"`
	// MaxSkew is, when not required, the largest difference in members between two values the
	// scheduler keeps to while it can; 0 means 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSkew int32 `json:"maxSkew,omitempty"`
	// PodGroupNames, when set, are the PodGroups of this PodGang that form the member: only
	// their pods count for it and only they are kept apart from the other members. Empty means
	// the whole PodGang. The operator sets it for the scaling-group replicas a base PodGang holds.
	// +optional
	// +listType=set
	PodGroupNames []string `json:"podGroupNames,omitempty"`
}
