package v1alpha1

import resourcev1 "k8s.io/api/resource/v1"

// ResourceSharingScope decides how many ResourceClaims a resourceSharing entry creates.
// +kubebuilder:validation:Enum=AllReplicas;PerReplica
type ResourceSharingScope string

const (
	// ResourceSharingScopeAllReplicas creates one claim per owner, shared by all its replicas.
	ResourceSharingScopeAllReplicas ResourceSharingScope = "AllReplicas"
	// ResourceSharingScopePerReplica creates one claim per replica of the owner.
	ResourceSharingScopePerReplica ResourceSharingScope = "PerReplica"
)

// ResourceClaimTemplateConfig is a named, inline ResourceClaimTemplate spec.
type ResourceClaimTemplateConfig struct {
	// Name identifies the template within the PodCliqueSet.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// TemplateSpec is the spec that claims are created from.
	TemplateSpec resourcev1.ResourceClaimTemplateSpec `json:"templateSpec"`
}

// ResourceSharingSpec shares claims made from one template. It is the clique-level form (no filter).
type ResourceSharingSpec struct {
	// Name of the template: an entry of resourceClaimTemplates, or, with namespace set, an
	// existing ResourceClaimTemplate in that namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of an external ResourceClaimTemplate.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Scope decides whether one claim is shared by all replicas or each replica gets its own.
	Scope ResourceSharingScope `json:"scope"`
}

// PCSResourceSharingSpec shares claims at the PodCliqueSet level.
type PCSResourceSharingSpec struct {
	ResourceSharingSpec `json:",inline"`
	// Filter limits which children get the claims; all children when absent.
	// +optional
	Filter *PCSResourceSharingFilter `json:"filter,omitempty"`
}

// PCSResourceSharingFilter names the children of a PodCliqueSet that get a claim.
type PCSResourceSharingFilter struct {
	// ChildCliqueNames are standalone cliques that get the claim.
	// +optional
	ChildCliqueNames []string `json:"childCliqueNames,omitempty"`
	// ChildScalingGroupNames are scaling groups whose cliques get the claim.
	// +optional
	ChildScalingGroupNames []string `json:"childScalingGroupNames,omitempty"`
}

// PCSGResourceSharingSpec shares claims at the scaling-group level.
type PCSGResourceSharingSpec struct {
	ResourceSharingSpec `json:",inline"`
	// Filter limits which member cliques get the claims; all members when absent.
	// +optional
	Filter *PCSGResourceSharingFilter `json:"filter,omitempty"`
}

// PCSGResourceSharingFilter names the member cliques of a scaling group that get a claim.
type PCSGResourceSharingFilter struct {
	// ChildCliqueNames are member cliques that get the claim.
	// +optional
	ChildCliqueNames []string `json:"childCliqueNames,omitempty"`
}
