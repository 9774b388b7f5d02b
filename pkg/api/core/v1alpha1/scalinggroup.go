package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=pcsg,categories=grove
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="MinAvailable",type=integer,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduledReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="PCLQs-Updated",type=integer,JSONPath=`.status.updateProgress.updatedPodCliquesCount`,priority=1
// +kubebuilder:printcolumn:name="PCLQs-Total",type=integer,JSONPath=`.status.updateProgress.totalPodCliquesCount`,priority=1
// +kubebuilder:printcolumn:name="MinBreached",type=string,JSONPath=`.status.conditions[?(@.type=="MinAvailableBreached")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodCliqueScalingGroup replicates a group of cliques of one PodCliqueSet replica together.
type PodCliqueScalingGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueScalingGroupSpec   `json:"spec"`
	Status PodCliqueScalingGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueScalingGroupList is a list of PodCliqueScalingGroups.
type PodCliqueScalingGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueScalingGroup `json:"items"`
}

// PodCliqueScalingGroupSpec is the desired state of a PodCliqueScalingGroup.
// Scaling below minAvailable is fine (those replicas leave the base gang), but not to 0: the
// base PodGang would lose the group's PodGroups, and a PodCliqueSet replica is scaled away
// through the PodCliqueSet.
// +kubebuilder:validation:XValidation:rule="self.replicas >= 1",message="a scaling group keeps at least 1 replica: scale the PodCliqueSet to remove whole replicas",fieldPath=".replicas",reason=FieldValueInvalid
type PodCliqueScalingGroupSpec struct {
	// Replicas is the number of group replicas. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas"`
	// MinAvailable is the number of replicas gang-scheduled with the base gang and kept healthy.
	// +kubebuilder:default=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// CliqueNames are the member cliques.
	CliqueNames []string `json:"cliqueNames"`
}

// PodCliqueScalingGroupStatus is the observed state of a PodCliqueScalingGroup.
type PodCliqueScalingGroupStatus struct {
	// Replicas is the observed number of replicas.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ScheduledReplicas counts replicas whose cliques all have minAvailable pods scheduled.
	// +kubebuilder:default=0
	ScheduledReplicas int32 `json:"scheduledReplicas"`
	// AvailableReplicas counts replicas whose cliques all have minAvailable pods ready.
	// +kubebuilder:default=0
	AvailableReplicas int32 `json:"availableReplicas"`
	// UpdatedReplicas counts replicas at the current PodCliqueSet generation hash.
	// +kubebuilder:default=0
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// Selector selects the pods of the group (for the scale subresource and HPAs).
	// +optional
	Selector *string `json:"selector,omitempty"`
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
	// LastErrors are the last errors seen while reconciling.
	// +optional
	LastErrors []LastError `json:"lastErrors,omitempty"`
	// Conditions of the group.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// CurrentPodCliqueSetGenerationHash is the PodCliqueSet hash fully realised in this group.
	// +optional
	CurrentPodCliqueSetGenerationHash *string `json:"currentPodCliqueSetGenerationHash,omitempty"`
	// UpdateProgress reports an ongoing update.
	// +optional
	UpdateProgress *PodCliqueScalingGroupUpdateProgress `json:"updateProgress,omitempty"`
}

// PodCliqueScalingGroupUpdateProgress reports the update of a scaling group.
type PodCliqueScalingGroupUpdateProgress struct {
	// UpdateStartedAt is when the update started.
	UpdateStartedAt metav1.Time `json:"updateStartedAt"`
	// UpdateEndedAt is when no update work was left.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// PodCliqueSetGenerationHash is the hash being rolled out.
	PodCliqueSetGenerationHash string `json:"podCliqueSetGenerationHash"`
	// UpdatedPodCliques are the member PodCliques already updated.
	// +optional
	UpdatedPodCliques []string `json:"updatedPodCliques,omitempty"`
	// UpdatedPodCliquesCount counts the member PodCliques already updated.
	// +optional
	// +kubebuilder:default=0
	UpdatedPodCliquesCount int32 `json:"updatedPodCliquesCount,omitempty"`
	// TotalPodCliquesCount counts the member PodCliques the current spec asks for.
	// +optional
	// +kubebuilder:default=0
	TotalPodCliquesCount int32 `json:"totalPodCliquesCount,omitempty"`
	// ReadyReplicaIndicesSelectedToUpdate tracks ready replicas replaced one at a time.
	// +optional
	ReadyReplicaIndicesSelectedToUpdate *PodCliqueScalingGroupReplicaUpdateProgress `json:"readyReplicaIndicesSelectedToUpdate,omitempty"`
}

// PodCliqueScalingGroupReplicaUpdateProgress is the replica being replaced and those done.
type PodCliqueScalingGroupReplicaUpdateProgress struct {
	// Current is the replica index being replaced.
	Current int32 `json:"current"`
	// Completed are the replica indices already replaced.
	// +optional
	Completed []int32 `json:"completed,omitempty"`
}
