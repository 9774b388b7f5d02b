package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the user-facing Grove kinds.
const GroupName = "grove.io"

var (
	// SchemeGroupVersion is the group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}
	// SchemeBuilder registers the kinds of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns a GroupResource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&PodCliqueSet{}, &PodCliqueSetList{},
		&PodClique{}, &PodCliqueList{},
		&PodCliqueScalingGroup{}, &PodCliqueScalingGroupList{},
		&ClusterTopology{}, &ClusterTopologyList{},
		&ClusterTopologyBinding{}, &ClusterTopologyBindingList{},
	)
	return addMetaTypes(scheme)
}
