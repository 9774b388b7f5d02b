// Package v1alpha1 holds the user-facing Grove API (group grove.io): PodCliqueSet and the
// objects the operator derives from it (PodClique, PodCliqueScalingGroup), plus the
// cluster-scoped ClusterTopology.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +groupName=grove.io
package v1alpha1
