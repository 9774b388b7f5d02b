package v1alpha1

// TopologyDomain names a level of a ClusterTopology, such as zone, block, rack or host.
// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]*$`
// +kubebuilder:validation:MaxLength=63
type TopologyDomain string

// Well-known topology domains.
const (
	TopologyDomainRegion     TopologyDomain = "region"
	TopologyDomainZone       TopologyDomain = "zone"
	TopologyDomainDataCenter TopologyDomain = "datacenter"
	TopologyDomainBlock      TopologyDomain = "block"
	TopologyDomainRack       TopologyDomain = "rack"
	TopologyDomainHost       TopologyDomain = "host"
	TopologyDomainNuma       TopologyDomain = "numa"
)

// TopologyConstraint asks for the pods of one replica of the constrained object to be packed
// into one domain of a ClusterTopology.
// Only the PodCliqueSet-level constraint may name just a topology (its children then carry
// the domains); a scaling-group or clique constraint needs a domain (see their rules).
// +kubebuilder:validation:XValidation:rule="has(self.packDomain) || has(self.pack) || has(self.topologyName) || has(self.slice)",message="a topology constraint needs a domain: set packDomain, pack or slice",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!(has(self.packDomain) && has(self.pack) && has(self.pack.required))",message="packDomain and pack.required must not both be set",fieldPath=".pack.required",reason=FieldValueForbidden
type TopologyConstraint struct {
	// TopologyName names the ClusterTopology the domains refer to. It is set on the
	// PodCliqueSet-level constraint and inherited by scaling-group and clique constraints.
	// Immutable.
	// +optional
	TopologyName string `json:"topologyName,omitempty"`
	// PackDomain is the required domain (the short form of pack.required).
	// +optional
	PackDomain TopologyDomain `json:"packDomain,omitempty"`
	// Pack holds the required and preferred domains.
	// +optional
	Pack *TopologyPackConstraint `json:"pack,omitempty"`
	// ReplicaSpreadConstraints spread the replicas over domains (see ReplicaSpreadConstraint):
	// on the PodCliqueSet level its replicas, on a scaling group the scaling group's replicas
	// within each PodCliqueSet replica; not on a clique. Immutable.
	// +optional
	// +listType=map
	// +listMapKey=domain
	// +kubebuilder:validation:MaxItems=4
	ReplicaSpreadConstraints []ReplicaSpreadConstraint `json:"replicaSpreadConstraints,omitempty"`
	// Slice splits the clique's pods into slices that each land whole in a domain of their own
	// (see SliceConstraint); clique level only. Immutable.
	// +optional
	Slice *SliceConstraint `json:"slice,omitempty"`
	// AffinityGroups keep roles of one replica together in a domain (see RoleAffinityGroup);
	// PodCliqueSet level only. Immutable.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	AffinityGroups []RoleAffinityGroup `json:"affinityGroups,omitempty"`
	// AntiAffinityGroups keep roles of one replica apart, each in a domain of its own (see
	// RoleAffinityGroup); PodCliqueSet level only. Immutable.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	AntiAffinityGroups []RoleAffinityGroup `json:"antiAffinityGroups,omitempty"`
}

// TopologyPackConstraint holds a hard (required) and a soft (preferred) domain.
// +kubebuilder:validation:XValidation:rule="has(self.required) || has(self.preferred)",message="pack needs required or preferred",reason=FieldValueRequired
type TopologyPackConstraint struct {
	// Required is a domain the pods must share; the workload is not scheduled otherwise.
	// +optional
	Required TopologyDomain `json:"required,omitempty"`
	// Preferred is a domain the scheduler tries to pack the pods into.
	// +optional
	Preferred TopologyDomain `json:"preferred,omitempty"`
}

// RequiredDomain is the required domain: pack.required, else packDomain.
func (tc *TopologyConstraint) RequiredDomain() TopologyDomain {
	if tc == nil {
		return ""
	}
	if tc.Pack != nil && tc.Pack.Required != "" {
		return tc.Pack.Required
	}
	return tc.PackDomain
}

// PreferredDomain is the preferred domain, if any.
func (tc *TopologyConstraint) PreferredDomain() TopologyDomain {
	if tc == nil || tc.Pack == nil {
		return ""
	}
	return tc.Pack.Preferred
}

// HasDomain reports whether the constraint names any domain.
func (tc *TopologyConstraint) HasDomain() bool {
	return tc.RequiredDomain() != "" || tc.PreferredDomain() != ""
}
