package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName=pcs,categories=grove
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Gangs-Scheduled",type=integer,JSONPath=`.status.scheduledPodGangs`
// +kubebuilder:printcolumn:name="Gangs",type=integer,JSONPath=`.status.totalPodGangs`
// +kubebuilder:printcolumn:name="PCLQs-Updated",type=integer,JSONPath=`.status.updateProgress.updatedPodCliquesCount`,priority=1
// +kubebuilder:printcolumn:name="PCLQs-Total",type=integer,JSONPath=`.status.updateProgress.totalPodCliquesCount`,priority=1
// +kubebuilder:printcolumn:name="PCSGs-Updated",type=integer,JSONPath=`.status.updateProgress.updatedPodCliqueScalingGroupsCount`,priority=1
// +kubebuilder:printcolumn:name="PCSGs-Total",type=integer,JSONPath=`.status.updateProgress.totalPodCliqueScalingGroupsCount`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Update",type=string,JSONPath=`.status.conditions[?(@.type=="UpdateInProgress")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodCliqueSet is the user-facing description of a multi-role inference workload: a set of
// cliques (roles) and scaling groups that is replicated spec.replicas times; each replica is
// gang-scheduled as one or more PodGangs.
type PodCliqueSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueSetSpec   `json:"spec"`
	Status PodCliqueSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueSetList is a list of PodCliqueSets.
type PodCliqueSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueSet `json:"items"`
}

// PodCliqueSetSpec is the desired state of a PodCliqueSet.
type PodCliqueSetSpec struct {
	// Replicas is the number of PodCliqueSet replicas (each one a gang).
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas,omitempty"`
	// UpdateStrategy decides how replicas move to a changed template.
	// +optional
	UpdateStrategy *PodCliqueSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// Template is the template of every replica.
	Template PodCliqueSetTemplateSpec `json:"template"`
}

// UpdateStrategyType names an update strategy.
// +kubebuilder:validation:Enum=RollingRecreate;Coherent;OnDelete
type UpdateStrategyType string

const (
	// RollingRecreateStrategy replaces replicas progressively, one PodCliqueSet replica at a
	// time; within it each standalone clique and scaling group replaces at most its
	// rollingUpdate.maxUnavailable pods (group replicas) at once. The default.
	RollingRecreateStrategy UpdateStrategyType = "RollingRecreate"
	// CoherentStrategy moves the roles of a PodCliqueSet replica together: the replica's
	// outdated pods of every clique are replaced at once, so it never serves with some roles
	// on the new template and others on the old. Replicas go one after another, as many at a
	// time as the smallest rollingUpdate.maxUnavailable of its components allows (resolved
	// against spec.replicas).
	CoherentStrategy UpdateStrategyType = "Coherent"
	// OnDeleteStrategy only moves pods to the new template when they are deleted.
	OnDeleteStrategy UpdateStrategyType = "OnDelete"
)

// PodCliqueSetUpdateStrategy configures updates of a PodCliqueSet.
type PodCliqueSetUpdateStrategy struct {
	// Type of the update strategy. Defaults to RollingRecreate.
	// +kubebuilder:default=RollingRecreate
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`
	// ReuseReservation: whether a PodGang whose pods a rolling update replaces prefers
	// (Preferred, the default) or requires (Required) the placement its previous pods had.
	// +optional
	ReuseReservation ReuseReservationPolicy `json:"reuseReservation,omitempty"`
}

// RollingUpdateConfiguration bounds the disruption and the duration of a rolling update of one
// component: a standalone clique or a scaling group. It applies to RollingRecreate and
// Coherent, and must not be set with OnDelete.
type RollingUpdateConfiguration struct {
	// MaxUnavailable is how many pods (of a standalone clique) or scaling-group replicas may be
	// unavailable at once while the component is updated, counted against its desired replicas;
	// a scale-in during the update draws on the same budget. An integer or a percentage
	// ("25%", rounded down, at least 1). Upstream Grove takes an integer; both are accepted.
	// Defaults to 1 (RollingRecreate and Coherent).
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// ProgressDeadline is how long the component's update may make no progress (no pod or group
	// replica moving to the new template and becoming ready) before the PodCliqueSet's
	// UpdateInProgress condition turns Unknown with reason ProgressDeadlineExceeded. Nothing is
	// rolled back or torn down. Unset: no deadline.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30s, 15m or 4h"
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// CliqueStartupType decides the start order of the cliques of a replica.
// +kubebuilder:validation:Enum=CliqueStartupTypeAnyOrder;CliqueStartupTypeInOrder;CliqueStartupTypeExplicit
type CliqueStartupType string

const (
	// CliqueStartupTypeAnyOrder starts all cliques at once.
	CliqueStartupTypeAnyOrder CliqueStartupType = "CliqueStartupTypeAnyOrder"
	// CliqueStartupTypeInOrder starts each clique after the previous one in template order.
	CliqueStartupTypeInOrder CliqueStartupType = "CliqueStartupTypeInOrder"
	// CliqueStartupTypeExplicit starts each clique after the cliques named in its startsAfter.
	CliqueStartupTypeExplicit CliqueStartupType = "CliqueStartupTypeExplicit"
)

// PodCliqueSetTemplateSpec is the template of one PodCliqueSet replica.
type PodCliqueSetTemplateSpec struct {
	// Cliques are the roles of the workload; at least one.
	// +kubebuilder:validation:MinItems=1
	// +listType=map
	// +listMapKey=name
	Cliques []*PodCliqueTemplateSpec `json:"cliques"`
	// StartupType decides the start order of the cliques. Defaults to CliqueStartupTypeAnyOrder.
	// +kubebuilder:default=CliqueStartupTypeAnyOrder
	// +optional
	StartupType *CliqueStartupType `json:"cliqueStartupType,omitempty"`
	// PriorityClassName is given to every pod and PodGang of the PodCliqueSet.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// HeadlessServiceConfig configures the headless Service of each replica.
	// +optional
	HeadlessServiceConfig *HeadlessServiceConfig `json:"headlessServiceConfig,omitempty"`
	// TopologyConstraint packs each replica (the whole gang) into one topology domain.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
	// TerminationDelay is how long a replica may stay below its minimums before Grove
	// recreates it as a gang. Defaults to 4h.
	// The rule runs in the schema so a malformed value gets a field-pathed error: a Go client
	// could not even decode it.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30s, 15m or 4h"
	// +optional
	TerminationDelay *metav1.Duration `json:"terminationDelay,omitempty"`
	// NodeFailurePolicy is what grove-operator does when a node running a bound member fails:
	// ReplaceInDomain (unset) replaces only that node's pods; RecreateGang recreates the replica.
	// +optional
	NodeFailurePolicy *NodeFailurePolicy `json:"nodeFailurePolicy,omitempty"`
	// ResourceClaimTemplates declares inline ResourceClaimTemplate specs that resourceSharing
	// entries at any level can refer to by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	ResourceClaimTemplates []ResourceClaimTemplateConfig `json:"resourceClaimTemplates,omitempty"`
	// ResourceSharing declares ResourceClaims shared at the PodCliqueSet level.
	// +optional
	ResourceSharing []PCSResourceSharingSpec `json:"resourceSharing,omitempty"`
	// PodCliqueScalingGroupConfigs are groups of cliques that scale together.
	// +optional
	// +listType=map
	// +listMapKey=name
	PodCliqueScalingGroupConfigs []PodCliqueScalingGroupConfig `json:"podCliqueScalingGroups,omitempty"`
}

// PodCliqueTemplateSpec is the template of one clique (role). A clique's constraint may carry a
// slice alone: the clique is then packed by the enclosing constraint and cut into slices.
// +kubebuilder:validation:XValidation:rule="!has(self.topologyConstraint) || has(self.topologyConstraint.packDomain) || has(self.topologyConstraint.pack) || has(self.topologyConstraint.slice)",message="a topology constraint needs a domain: set packDomain, pack or slice",fieldPath=".topologyConstraint",reason=FieldValueRequired
type PodCliqueTemplateSpec struct {
	// Name of the clique, unique within the PodCliqueSet.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Labels are added to the PodClique and its pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to the PodClique and its pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// TopologyConstraint packs the pods of this clique (per replica) into one topology domain.
	// It must not be broader than its parent's.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
	// ResourceSharing declares ResourceClaims shared at the clique level.
	// +optional
	ResourceSharing []ResourceSharingSpec `json:"resourceSharing,omitempty"`
	// RollingUpdate bounds the update of a standalone clique (its pods). A clique of a scaling
	// group must not set it: the group's rollingUpdate governs it.
	// +optional
	RollingUpdate *RollingUpdateConfiguration `json:"rollingUpdate,omitempty"`
	// Spec is the desired state of the PodClique.
	Spec PodCliqueSpec `json:"spec"`
}

// PodCliqueScalingGroupConfig groups cliques that are replicated together.
// +kubebuilder:validation:XValidation:rule="!has(self.topologyConstraint) || has(self.topologyConstraint.packDomain) || has(self.topologyConstraint.pack)",message="a topology constraint needs a domain: set packDomain or pack",fieldPath=".topologyConstraint",reason=FieldValueRequired
type PodCliqueScalingGroupConfig struct {
	// Name of the scaling group, unique within the PodCliqueSet.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// CliqueNames are the member cliques, in order.
	// +kubebuilder:validation:MinItems=1
	CliqueNames []string `json:"cliqueNames"`
	// Annotations are added to the PodCliqueScalingGroup.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Replicas is the initial number of replicas of the group. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// MinAvailable is the number of group replicas that are gang-scheduled with the base
	// gang and must stay healthy. Defaults to 1.
	// +kubebuilder:default=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// ScaleConfig enables a HorizontalPodAutoscaler for the group.
	// +optional
	ScaleConfig *AutoScalingConfig `json:"scaleConfig,omitempty"`
	// RollingUpdate bounds the update of the group (its replicas, each recreated whole).
	// +optional
	RollingUpdate *RollingUpdateConfiguration `json:"rollingUpdate,omitempty"`
	// ResourceSharing declares ResourceClaims shared at the scaling-group level.
	// +optional
	ResourceSharing []PCSGResourceSharingSpec `json:"resourceSharing,omitempty"`
	// TopologyConstraint packs each replica of the group into one topology domain.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// HeadlessServiceConfig configures the per-replica headless Service.
type HeadlessServiceConfig struct {
	// PublishNotReadyAddresses publishes DNS records of pods before they are ready.
	// +kubebuilder:default=true
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses"`
}

// PodCliqueSetStatus is the observed state of a PodCliqueSet.
type PodCliqueSetStatus struct {
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
	// Conditions of the PodCliqueSet.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastErrors are the last errors seen while reconciling.
	// +optional
	LastErrors []LastError `json:"lastErrors,omitempty"`
	// Replicas is the number of replicas that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// UpdatedReplicas is the number of replicas at the current generation hash.
	// +kubebuilder:default=0
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// AvailableReplicas is the number of replicas whose cliques and scaling groups all meet their minimums.
	// +kubebuilder:default=0
	AvailableReplicas int32 `json:"availableReplicas"`
	// Selector selects the pods of the PodCliqueSet (for the scale subresource and HPAs).
	// +optional
	Selector *string `json:"hpaPodSelector,omitempty"`
	// PodGangStatuses summarises the PodGangs of the PodCliqueSet.
	// +optional
	PodGangStatutes []PodGangStatus `json:"podGangStatuses,omitempty"`
	// CurrentGenerationHash is the hash of the template the replicas should converge to.
	// +optional
	CurrentGenerationHash *string `json:"currentGenerationHash,omitempty"`
	// TotalPodGangs is the number of PodGangs of the PodCliqueSet's replicas.
	// +optional
	TotalPodGangs int32 `json:"totalPodGangs,omitempty"`
	// ScheduledPodGangs is the number of those PodGangs whose quorum grove-scheduler placed.
	// +optional
	ScheduledPodGangs int32 `json:"scheduledPodGangs,omitempty"`
	// UpdateProgress reports an ongoing update.
	// +optional
	UpdateProgress *PodCliqueSetUpdateProgress `json:"updateProgress,omitempty"`
	// NodeFailures are the replicas with a node failure in progress or remembered for the back-off.
	// +optional
	// +listType=map
	// +listMapKey=replicaIndex
	NodeFailures []ReplicaNodeFailureStatus `json:"nodeFailures,omitempty"`
}

// PodGangStatus summarises one PodGang of a PodCliqueSet.
type PodGangStatus struct {
	// Name of the PodGang.
	Name string `json:"name"`
	// Phase of the PodGang.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Conditions of the PodGang.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodCliqueSetUpdateProgress reports the progress of an update.
type PodCliqueSetUpdateProgress struct {
	// UpdateStartedAt is when the update started.
	UpdateStartedAt metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when no update work was left.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// UpdatedPodCliques are the PodCliques already at the new hash.
	// +optional
	UpdatedPodCliques []string `json:"updatedPodCliques,omitempty"`
	// UpdatedPodCliqueScalingGroups are the scaling groups already at the new hash.
	// +optional
	UpdatedPodCliqueScalingGroups []string `json:"updatedPodCliqueScalingGroups,omitempty"`
	// UpdatedPodCliquesCount counts the PodCliques already at the new hash.
	// +optional
	// +kubebuilder:default=0
	UpdatedPodCliquesCount int32 `json:"updatedPodCliquesCount,omitempty"`
	// TotalPodCliquesCount counts the PodCliques the current spec asks for.
	// +optional
	// +kubebuilder:default=0
	TotalPodCliquesCount int32 `json:"totalPodCliquesCount,omitempty"`
	// UpdatedPodCliqueScalingGroupsCount counts the scaling groups already at the new hash.
	// +optional
	// +kubebuilder:default=0
	UpdatedPodCliqueScalingGroupsCount int32 `json:"updatedPodCliqueScalingGroupsCount,omitempty"`
	// TotalPodCliqueScalingGroupsCount counts the scaling groups the current spec asks for.
	// +optional
	// +kubebuilder:default=0
	TotalPodCliqueScalingGroupsCount int32 `json:"totalPodCliqueScalingGroupsCount,omitempty"`
	// CurrentlyUpdating are the replicas being updated (RollingRecreate updates one at a time;
	// a list, as upstream Grove writes it).
	// +optional
	CurrentlyUpdating []PodCliqueSetReplicaUpdateProgress `json:"currentlyUpdating,omitempty"`
}

// PodCliqueSetReplicaUpdateProgress reports the update of one replica.
type PodCliqueSetReplicaUpdateProgress struct {
	// ReplicaIndex is the replica being updated.
	ReplicaIndex int32 `json:"replicaIndex"`
	// UpdateStartedAt is when the update of this replica started.
	UpdateStartedAt metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when every pod of this replica ran the new template.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
}
