package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the operator configuration.
const GroupName = "operator.config.grove.io"

var (
	// SchemeGroupVersion is the group version of OperatorConfiguration.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}
	// SchemeBuilder registers OperatorConfiguration and its defaults.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs)
	// AddToScheme adds OperatorConfiguration to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &OperatorConfiguration{})
	return nil
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	scheme.AddTypeDefaultingFunc(&OperatorConfiguration{}, func(obj any) {
		SetDefaults_OperatorConfiguration(obj.(*OperatorConfiguration))
	})
	return nil
}
