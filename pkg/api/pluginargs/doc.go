// Package pluginargs holds the internal (hub) form of the typed arguments of grove-scheduler's
// plugins. The versioned form a KubeSchedulerConfiguration carries is in package v1; package
// scheme registers both into kube-scheduler's config scheme.
//
// +kubebuilder:object:generate=true
// +groupName=kubescheduler.config.k8s.io
package pluginargs
