// Package v1alpha1 holds OperatorConfiguration (group operator.config.grove.io), the file
// passed to grove-operator with --config. It is not a CRD.
//
// +kubebuilder:object:generate=true
// +groupName=operator.config.grove.io
package v1alpha1
