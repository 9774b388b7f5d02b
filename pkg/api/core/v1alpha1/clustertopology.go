package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ct,categories=grove
// +kubebuilder:printcolumn:name="Levels",type=string,JSONPath=`.spec.levels[*].domain`
// +kubebuilder:printcolumn:name="Drift",type=string,JSONPath=`.status.conditions[?(@.type=="SchedulerTopologyDrift")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTopology names the levels of a cluster's network topology, broadest first, and maps
// each to the node label key that carries it.
type ClusterTopology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterTopologySpec   `json:"spec"`
	Status ClusterTopologyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterTopologyList is a list of ClusterTopologies.
type ClusterTopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTopology `json:"items"`
}

// ClusterTopologySpec is the desired state of a ClusterTopology.
type ClusterTopologySpec struct {
	// Levels from broadest (index 0) to narrowest.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(l, self.exists_one(m, m.domain == l.domain))",message="domains must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(l, self.exists_one(m, m.key == l.key))",message="keys must be unique"
	Levels []TopologyLevel `json:"levels"`
	// SchedulerReferences name externally managed topology objects of scheduler backends;
	// Grove only checks them for drift. Backends not listed get a topology object managed by Grove.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, self.exists_one(s, s.schedulerName == r.schedulerName))",message="each scheduler may be referenced once"
	SchedulerReferences []SchedulerReference `json:"schedulerReferences,omitempty"`
}

// TopologyLevel maps a domain name to a node label key.
type TopologyLevel struct {
	// Domain is the level's name, e.g. zone, block, rack, host.
	Domain TopologyDomain `json:"domain"`
	// Key is the node label key whose value identifies the domain a node is in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	Key string `json:"key"`
}

// SchedulerReference points a scheduler backend at its externally managed topology object.
type SchedulerReference struct {
	// SchedulerName is the backend, e.g. kai-scheduler.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	SchedulerName string `json:"schedulerName"`
	// Reference is the name of the backend's topology object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Reference string `json:"reference"`
}

// ClusterTopologyStatus is the observed state of a ClusterTopology.
type ClusterTopologyStatus struct {
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions of the ClusterTopology (SchedulerTopologyDrift).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SchedulerTopologyStatuses report, per backend, whether its topology object matches.
	// +optional
	SchedulerTopologyStatuses []SchedulerTopologyStatus `json:"schedulerTopologyStatuses,omitempty"`
}

// SchedulerTopologyStatus is the sync state of one backend's topology object.
type SchedulerTopologyStatus struct {
	// SchedulerName is the backend.
	SchedulerName string `json:"schedulerName"`
	// Reference is the name of the backend's topology object.
	Reference string `json:"reference"`
	// InSync is true when the backend object's levels equal this ClusterTopology's.
	InSync bool `json:"inSync"`
	// SchedulerBackendTopologyObservedVersion is the generation of the backend object last
	// compared; 0 when it was not found.
	// +optional
	SchedulerBackendTopologyObservedVersion int64 `json:"schedulerBackendTopologyObservedVersion,omitempty"`
	// Message explains a difference.
	// +optional
	Message string `json:"message,omitempty"`
}

// Keys returns the label keys of the levels, broadest first.
func (s *ClusterTopologySpec) Keys() []string {
	keys := make([]string, 0, len(s.Levels))
	for _, l := range s.Levels {
		keys = append(keys, l.Key)
	}
	return keys
}

// LevelIndex returns the index of a domain (0 = broadest) or -1.
func (s *ClusterTopologySpec) LevelIndex(domain TopologyDomain) int {
	for i, l := range s.Levels {
		if l.Domain == domain {
			return i
		}
	}
	return -1
}
