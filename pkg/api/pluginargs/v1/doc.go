// Package v1 holds the versioned (kubescheduler.config.k8s.io/v1) form of grove-scheduler's
// plugin arguments, with defaults and conversions to the internal form.
//
// +kubebuilder:object:generate=true
// +groupName=kubescheduler.config.k8s.io
package v1
