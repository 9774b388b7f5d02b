package v1alpha1

// RoleAffinityGroup places members of a PodGang (each a set of its PodGroups, e.g. the
// PodGroups of one role) relative to each other within the values of a node label key: in
// spec.affinityGroups all members share one value; in spec.antiAffinityGroups each member's
// PodGroups share one value that no other member of the group uses.
type RoleAffinityGroup struct {
	// Name of the group, used in messages.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Members of the group.
	// +kubebuilder:validation:MinItems=2
	Members []RoleAffinityMember `json:"members"`
	// TopologyKey is the node label key whose values are the domains.
	// +kubebuilder:validation:MinLength=1
	TopologyKey string `json:"topologyKey"`
	// Required: the gang waits rather than break the group. Otherwise the scheduler keeps the
	// group where it can and places the gang anyway where it cannot.
	// +optional
	Required bool `json:"required,omitempty"`
}

// RoleAffinityMember is one member of a RoleAffinityGroup.
type RoleAffinityMember struct {
	// Name of the member (the operator uses the role's name: a clique or scaling group of the
	// PodCliqueSet template), used in messages.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// PodGroupNames are the member's PodGroups in this PodGang.
	// +kubebuilder:validation:MinItems=1
	PodGroupNames []string `json:"podGroupNames"`
}
