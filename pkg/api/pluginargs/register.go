package pluginargs

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is kube-scheduler's internal config version.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: runtime.APIVersionInternal}

var (
	// localSchemeBuilder is kube-scheduler's own builder: its lazily built plugin-args
	// conversion scheme only sees kinds registered there.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	ownSchemeBuilder   = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds only Grove's internal args kinds to a scheme.
	AddToScheme = ownSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &GangArgs{}, &TopologyArgs{}, &DRAArgs{})
	return nil
}
