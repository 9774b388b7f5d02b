package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// The short name is pgang, not pg: KAI, Volcano and scheduler-plugins all call their PodGroup
// CRDs pg, and Grove's KAI backend runs next to KAI's, so `kubectl get pg` would be ambiguous.
// +kubebuilder:resource:shortName=pgang,categories=grove
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Initialized",type=string,JSONPath=`.status.conditions[?(@.type=="Initialized")].status`
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodGang is a group of pods that must be scheduled together: every PodGroup gets at least
// minReplicas pods placed, or none of the gang is bound.
type PodGang struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodGangSpec   `json:"spec"`
	Status PodGangStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodGangList is a list of PodGangs.
type PodGangList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGang `json:"items"`
}

// PodGangSpec is the desired state of a PodGang.
type PodGangSpec struct {
	// PodGroups are the member groups of the gang.
	// +kubebuilder:validation:MinItems=1
	PodGroups []PodGroup `json:"podgroups"`
	// TopologyConstraint packs the whole gang.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
	// TopologyConstraintGroupConfigs pack subsets of the PodGroups.
	// +optional
	TopologyConstraintGroupConfigs []TopologyConstraintGroupConfig `json:"topologyConstraintGroupConfigs,omitempty"`
	// PriorityClassName of the gang.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// ReuseReservationRef suggests reusing the placement of an earlier PodGang (its
	// status.lastPlacement): grove-operator names the PodGang itself while an update replaces
	// its pods, so they go back to the domains (and nodes) the previous ones had.
	// +optional
	ReuseReservationRef *NamespacedName `json:"reuseReservationRef,omitempty"`
	// SharedTopologyConstraint packs this PodGang together with the other PodGangs of its
	// namespace that name the same group (the base and scaled PodGangs of one PodCliqueSet
	// replica): all of them must lie within one value of the required key — the same value for
	// every gang of the group, pinned by the first one placed — and should lie within the value
	// of the preferred key the others of the group use.
	// +optional
	SharedTopologyConstraint *SharedTopologyConstraint `json:"sharedTopologyConstraint,omitempty"`
	// ReplicaSpreadConstraints spread this PodGang's replica away from the other replicas of
	// its spread group (see ReplicaSpreadConstraint).
	// +optional
	ReplicaSpreadConstraints []ReplicaSpreadConstraint `json:"replicaSpreadConstraints,omitempty"`
	// AffinityGroups keep members of the gang in one domain each (see RoleAffinityGroup).
	// +optional
	AffinityGroups []RoleAffinityGroup `json:"affinityGroups,omitempty"`
	// AntiAffinityGroups keep members of the gang in different domains (see RoleAffinityGroup).
	// +optional
	AntiAffinityGroups []RoleAffinityGroup `json:"antiAffinityGroups,omitempty"`
}

// SharedTopologyConstraint is a pack constraint over a group of PodGangs.
type SharedTopologyConstraint struct {
	// Group names the set of PodGangs that share the domain. The operator uses the name of the
	// PodCliqueSet replica's base PodGang.
	// +kubebuilder:validation:MinLength=1
	Group string `json:"group"`
	// PackConstraint holds the required and preferred keys the group shares.
	// +optional
	PackConstraint *TopologyPackConstraint `json:"packConstraint,omitempty"`
}

// Required returns the required key of a shared constraint, or "".
func (sc *SharedTopologyConstraint) Required() string {
	if sc == nil || sc.PackConstraint == nil || sc.PackConstraint.Required == nil {
		return ""
	}
	return *sc.PackConstraint.Required
}

// Preferred returns the preferred key of a shared constraint, or "".
func (sc *SharedTopologyConstraint) Preferred() string {
	if sc == nil || sc.PackConstraint == nil || sc.PackConstraint.Preferred == nil {
		return ""
	}
	return *sc.PackConstraint.Preferred
}

// PodGroup is a set of pods of the gang that share one pod template.
type PodGroup struct {
	// Name of the group (the PodClique's name).
	Name string `json:"name"`
	// PodReferences are the pods of the group, sorted.
	PodReferences []NamespacedName `json:"podReferences"`
	// MinReplicas is the number of the group's pods that must be placed together.
	// +kubebuilder:validation:Minimum=0
	MinReplicas int32 `json:"minReplicas"`
	// TopologyConstraint packs this group.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
	// Slices splits the group into slices, each within a domain of its own (PodGroupSlices).
	// +optional
	Slices *PodGroupSlices `json:"slices,omitempty"`
}

// TopologyConstraint holds pack constraints as node label keys.
type TopologyConstraint struct {
	// PackConstraint holds the required and preferred keys.
	// +optional
	PackConstraint *TopologyPackConstraint `json:"packConstraint,omitempty"`
}

// TopologyPackConstraint holds node label keys: pods must share one value of required and
// should share one value of preferred.
type TopologyPackConstraint struct {
	// Required is a node label key the pods must share a value of.
	// +optional
	Required *string `json:"required,omitempty"`
	// Preferred is a node label key the pods should share a value of.
	// +optional
	Preferred *string `json:"preferred,omitempty"`
}

// TopologyConstraintGroupConfig packs a subset of the PodGroups together.
type TopologyConstraintGroupConfig struct {
	// Name of the subset.
	Name string `json:"name"`
	// PodGroupNames are the groups in the subset.
	PodGroupNames []string `json:"podGroupNames"`
	// TopologyConstraint for the subset.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// NamespacedName names a namespaced object.
type NamespacedName struct {
	// Namespace of the object.
	Namespace string `json:"namespace"`
	// Name of the object.
	Name string `json:"name"`
}

// PodGangPhase is the lifecycle phase of a PodGang.
// +kubebuilder:validation:Enum=Pending;Starting;Running
type PodGangPhase string

// PodGang phases.
const (
	PodGangPhasePending  PodGangPhase = "Pending"
	PodGangPhaseStarting PodGangPhase = "Starting"
	PodGangPhaseRunning  PodGangPhase = "Running"
)

// PodGang condition types. PodGang status has one writer per condition type, each applying
// its own entries with server-side apply under its own field manager: the operator writes the
// spec, Initialized (and the first phase, Pending) as "grove-operator", Unhealthy as
// "grove-operator-partial-gang" and Ready, lastScheduled and lastReady as
// "grove-operator-podgang-readiness"; the scheduler writes Scheduled, phase and placementScore as
// "grove-scheduler" and DisruptionTarget as "grove-scheduler-preemption".
const (
	// PodGangConditionInitialized is True once every pod of the gang exists and is listed (operator).
	PodGangConditionInitialized = "Initialized"
	// PodGangConditionScheduled is True once the gang's quorum is bound (scheduler).
	PodGangConditionScheduled = "Scheduled"
	// PodGangConditionReady is True once all PodGroups have minReplicas ready pods (operator,
	// with lastScheduled and lastReady).
	PodGangConditionReady = "Ready"
	// PodGangConditionUnhealthy is True while the gang is partly bound (operator): a
	// backend-independent observation of its pods that the operator acts on.
	PodGangConditionUnhealthy = "Unhealthy"
	// PodGangConditionDisruptionTarget is True when the gang is about to be terminated (scheduler).
	PodGangConditionDisruptionTarget = "DisruptionTarget"
)

// PodGangStatus is the observed state of a PodGang.
type PodGangStatus struct {
	// Phase of the gang: Pending from the first status write on (the schema's default, so
	// the scheduler, which moves it on, is its only writer), then Starting and Running.
	// +optional
	// +kubebuilder:default=Pending
	Phase PodGangPhase `json:"phase,omitempty"`
	// Conditions of the gang.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// PlacementScore rates the network locality of the placement, 1.0 being the best possible.
	// +optional
	PlacementScore *float64 `json:"placementScore,omitempty"`
	// LastScheduled is when every PodGroup last came to have minReplicas pods bound: nil until
	// the first time, never cleared, moved on when the gang is placed again after losing it.
	// +optional
	LastScheduled *metav1.Time `json:"lastScheduled,omitempty"`
	// LastReady is when the Ready condition last turned True: nil until the first time, never
	// cleared, moved on when the gang is ready again after losing it.
	// +optional
	LastReady *metav1.Time `json:"lastReady,omitempty"`
	// LastPlacement is where the gang's quorum was last bound (scheduler). It outlives the
	// pods, so that a PodGang whose spec.reuseReservationRef names this one can go back there.
	// +optional
	LastPlacement *PodGangPlacement `json:"lastPlacement,omitempty"`
}

// Required returns the required key of a constraint, or "".
func (tc *TopologyConstraint) Required() string {
	if tc == nil || tc.PackConstraint == nil || tc.PackConstraint.Required == nil {
		return ""
	}
	return *tc.PackConstraint.Required
}

// Preferred returns the preferred key of a constraint, or "".
func (tc *TopologyConstraint) Preferred() string {
	if tc == nil || tc.PackConstraint == nil || tc.PackConstraint.Preferred == nil {
		return ""
	}
	return *tc.PackConstraint.Preferred
}
