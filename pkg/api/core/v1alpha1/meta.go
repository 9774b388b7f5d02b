package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func addMetaTypes(scheme *runtime.Scheme) error {
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// LastError records an error the controller hit while reconciling an object.
type LastError struct {
	// Code identifies the kind of error.
	Code string `json:"code"`
	// Description is a human-readable description of the error.
	Description string `json:"description"`
	// ObservedAt is when the error was seen.
	ObservedAt metav1.Time `json:"observedAt"`
}
