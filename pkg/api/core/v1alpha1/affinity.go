package v1alpha1

// RoleAffinityGroup names roles of one PodCliqueSet replica (cliques or scaling groups of the
// template) that are placed relative to each other at one level of the ClusterTopology. In
// affinityGroups the members share one domain of the level (prefill next to its decode in one
// rack); in antiAffinityGroups each member takes a domain of its own that no other member of
// the group uses. The constraint applies per PodCliqueSet replica, to the members' pods in the
// replica's base PodGang (standalone cliques and scaling-group replicas below minAvailable).
type RoleAffinityGroup struct {
	// Name identifies the group in the list and in messages.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Members are clique names or scaling-group names of the template, each listed once.
	// +listType=set
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=16
	Members []string `json:"members"`
	// Domain is the ClusterTopology level, e.g. rack. It must be equal to or broader than each
	// member's own required pack domain (a member packed into one rack cannot be kept with
	// another in one host) and, for anti-affinity, narrower than the PodCliqueSet's required
	// pack domain (members apart inside one rack need a level below rack).
	Domain TopologyDomain `json:"domain"`
	// WhenUnsatisfiable: DoNotSchedule (required, the default: the replica's base PodGang waits
	// whole) or ScheduleAnyway (preferred: it falls back to plain packing).
	// +optional
	// +kubebuilder:default=DoNotSchedule
	WhenUnsatisfiable SpreadAction `json:"whenUnsatisfiable,omitempty"`
}

// Required reports whether the group is required (DoNotSchedule, the default).
func (g *RoleAffinityGroup) Required() bool {
	return g.WhenUnsatisfiable != SpreadScheduleAnyway
}
