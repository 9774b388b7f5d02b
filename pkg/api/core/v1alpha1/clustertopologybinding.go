package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ctb,categories=grove
// +kubebuilder:printcolumn:name="Domains",type=string,JSONPath=`.spec.levels[*].domain`
// +kubebuilder:printcolumn:name="Drift",type=string,JSONPath=`.status.conditions[?(@.type=="SchedulerTopologyDrift")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTopologyBinding is upstream Grove's later name and shape of a ClusterTopology, served so
// that its manifests (and NVIDIA Dynamo's) apply unchanged. ClusterTopology stays the kind
// Grove works with: grove-operator keeps a ClusterTopology of the same name equal to each
// binding, and writes the ClusterTopology's status back onto the binding in upstream's shape.
// (Short name ctb: ct is ClusterTopology's, and two kinds of one group cannot share one.)
type ClusterTopologyBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterTopologyBindingSpec   `json:"spec"`
	Status ClusterTopologyBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterTopologyBindingList is a list of ClusterTopologyBindings.
type ClusterTopologyBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTopologyBinding `json:"items"`
}

// ClusterTopologyBindingSpec is a ClusterTopologySpec with upstream's field names.
type ClusterTopologyBindingSpec struct {
	// Levels from broadest (index 0) to narrowest, as in a ClusterTopology.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(l, self.exists_one(m, m.domain == l.domain))",message="domains must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(l, self.exists_one(m, m.key == l.key))",message="keys must be unique"
	Levels []TopologyLevel `json:"levels"`
	// SchedulerTopologyBindings name externally managed topology objects of scheduler backends
	// (a ClusterTopology's schedulerReferences).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, self.exists_one(s, s.schedulerName == r.schedulerName))",message="each scheduler may be referenced once"
	SchedulerTopologyBindings []SchedulerTopologyBinding `json:"schedulerTopologyBindings,omitempty"`
}

// SchedulerTopologyBinding points a scheduler backend at its externally managed topology object.
type SchedulerTopologyBinding struct {
	// SchedulerName is the backend, e.g. kai-scheduler.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	SchedulerName string `json:"schedulerName"`
	// TopologyReference is the name of the backend's topology object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TopologyReference string `json:"topologyReference"`
}

// ClusterTopologyBindingStatus is the status of the ClusterTopology standing for the binding.
type ClusterTopologyBindingStatus struct {
	// ObservedGeneration is the binding generation the ClusterTopology was last made equal to.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: the ClusterTopology's (SchedulerTopologyDrift), and Translated.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SchedulerTopologyStatuses report, per backend, whether its topology object matches.
	// +optional
	SchedulerTopologyStatuses []SchedulerTopologyBindingStatus `json:"schedulerTopologyStatuses,omitempty"`
}

// SchedulerTopologyBindingStatus is a SchedulerTopologyStatus with upstream's field names.
type SchedulerTopologyBindingStatus struct {
	// SchedulerName is the backend.
	SchedulerName string `json:"schedulerName"`
	// TopologyReference is the name of the backend's topology object.
	TopologyReference string `json:"topologyReference"`
	// InSync is true when the backend object's levels equal the binding's.
	InSync bool `json:"inSync"`
	// SchedulerBackendTopologyObservedGeneration is the generation of the backend object last
	// compared; 0 when it was not found.
	// +optional
	SchedulerBackendTopologyObservedGeneration int64 `json:"schedulerBackendTopologyObservedGeneration,omitempty"`
	// Message explains a difference.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterTopologySpec is the ClusterTopology spec the binding stands for.
func (b *ClusterTopologyBinding) ClusterTopologySpec() ClusterTopologySpec {
	spec := ClusterTopologySpec{Levels: append([]TopologyLevel(nil), b.Spec.Levels...)}
	for _, s := range b.Spec.SchedulerTopologyBindings {
		spec.SchedulerReferences = append(spec.SchedulerReferences, SchedulerReference{SchedulerName: s.SchedulerName, Reference: s.TopologyReference})
	}
	return spec
}

// ClusterTopologySpecFor is ClusterTopologySpec with only the scheduler bindings of the
// schedulers in enabled (the enabled topology-aware backends); the others are ignored, as
// upstream Grove ignores bindings of backends it does not run, and their indices in
// spec.schedulerTopologyBindings are returned. kept maps each scheduler reference of the
// result to its index in the binding.
func (b *ClusterTopologyBinding) ClusterTopologySpecFor(enabled []string) (spec ClusterTopologySpec, kept, ignored []int) {
	spec = ClusterTopologySpec{Levels: append([]TopologyLevel(nil), b.Spec.Levels...)}
	for i, s := range b.Spec.SchedulerTopologyBindings {
		on := false
		for _, e := range enabled {
			on = on || e == s.SchedulerName
		}
		if !on {
			ignored = append(ignored, i)
			continue
		}
		kept = append(kept, i)
		spec.SchedulerReferences = append(spec.SchedulerReferences, SchedulerReference{SchedulerName: s.SchedulerName, Reference: s.TopologyReference})
	}
	return spec, kept, ignored
}
