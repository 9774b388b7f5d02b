// Package v1alpha1 holds the scheduling contract between grove-operator and schedulers
// (group scheduler.grove.io): the PodGang.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +groupName=scheduler.grove.io
package v1alpha1
