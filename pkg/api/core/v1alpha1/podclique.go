package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName=pclq,categories=grove
// +kubebuilder:printcolumn:name="MinAvailable",type=integer,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduledReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Gated",type=integer,JSONPath=`.status.scheduleGatedReplicas`,priority=1
// +kubebuilder:printcolumn:name="MinBreached",type=string,JSONPath=`.status.conditions[?(@.type=="MinAvailableBreached")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodClique is a set of pods of one role in one PodCliqueSet replica (or scaling-group replica).
type PodClique struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state. Scaling a PodClique (kubectl scale, /scale, an update of
	// replicas) below minAvailable is refused: the clique's gang would lose its quorum and be
	// terminated. Scaling up, or leaving replicas as they are, is always allowed.
	// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || self.replicas >= self.minAvailable || self.replicas >= oldSelf.replicas",message="must not be below minAvailable: the gang would lose its quorum; scale the PodCliqueSet (or its scaling group) to remove whole gangs",fieldPath=".replicas",reason=FieldValueInvalid
	Spec   PodCliqueSpec   `json:"spec"`
	Status PodCliqueStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueList is a list of PodCliques.
type PodCliqueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodClique `json:"items"`
}

// PodCliqueSpec is the desired state of a PodClique.
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || self.replicas == 0 || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas",fieldPath=".minAvailable",reason=FieldValueInvalid
type PodCliqueSpec struct {
	// RoleName is the role of the pods.
	RoleName string `json:"roleName"`
	// PodSpec is the spec of every pod of the clique.
	PodSpec corev1.PodSpec `json:"podSpec"`
	// Replicas is the number of pods. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas"`
	// MinAvailable is the number of pods gang-scheduled together and the health floor of the
	// clique. Defaults to replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// StartsAfter names the cliques that must be ready before this one starts
	// (with cliqueStartupType CliqueStartupTypeExplicit).
	// +optional
	StartsAfter []string `json:"startsAfter,omitempty"`
	// ScaleConfig enables a HorizontalPodAutoscaler for a standalone clique.
	// +optional
	ScaleConfig *AutoScalingConfig `json:"autoScalingConfig,omitempty"`
}

// AutoScalingConfig configures a HorizontalPodAutoscaler.
type AutoScalingConfig struct {
	// MinReplicas is the autoscaler's lower bound.
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the autoscaler's upper bound.
	// +kubebuilder:validation:Maximum=10000
	MaxReplicas int32 `json:"maxReplicas"`
	// Metrics drive the autoscaler; 80% average CPU utilisation when empty.
	// +listType=atomic
	// +optional
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
}

// PodCliqueStatus is the observed state of a PodClique.
type PodCliqueStatus struct {
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
	// LastErrors are the last errors seen while reconciling.
	// +optional
	LastErrors []LastError `json:"lastErrors,omitempty"`
	// Replicas is the number of non-terminated pods.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready pods.
	// +kubebuilder:default=0
	ReadyReplicas int32 `json:"readyReplicas"`
	// UpdatedReplicas is the number of pods at the current template hash.
	// +kubebuilder:default=0
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ScheduleGatedReplicas is the number of pods still carrying a scheduling gate.
	// +kubebuilder:default=0
	ScheduleGatedReplicas int32 `json:"scheduleGatedReplicas"`
	// ScheduledReplicas is the number of pods bound to a node.
	// +kubebuilder:default=0
	ScheduledReplicas int32 `json:"scheduledReplicas"`
	// Selector selects the pods of the clique (for the scale subresource and HPAs).
	// +optional
	Selector *string `json:"hpaPodSelector,omitempty"`
	// Conditions of the PodClique.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// CurrentPodCliqueSetGenerationHash is the PodCliqueSet hash fully realised in this clique.
	// +optional
	CurrentPodCliqueSetGenerationHash *string `json:"currentPodCliqueSetGenerationHash,omitempty"`
	// CurrentPodTemplateHash is the pod template hash fully realised in this clique.
	// +optional
	CurrentPodTemplateHash *string `json:"currentPodTemplateHash,omitempty"`
	// UpdateProgress reports an ongoing update.
	// +optional
	UpdateProgress *PodCliqueUpdateProgress `json:"updateProgress,omitempty"`
}

// PodCliqueUpdateProgress reports the update of a PodClique.
type PodCliqueUpdateProgress struct {
	// UpdateStartedAt is when the update started.
	UpdateStartedAt metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when no update work was left.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// PodCliqueSetGenerationHash is the hash being rolled out.
	PodCliqueSetGenerationHash string `json:"podCliqueSetGenerationHash"`
	// PodTemplateHash is the pod template hash being rolled out.
	PodTemplateHash string `json:"podTemplateHash"`
	// ReadyPodsSelectedToUpdate tracks the ready pods replaced one at a time.
	// +optional
	ReadyPodsSelectedToUpdate *PodsSelectedToUpdate `json:"readyPodsSelectedToUpdate,omitempty"`
}

// PodsSelectedToUpdate is the pod being replaced and those already replaced.
type PodsSelectedToUpdate struct {
	// Current is the pod being replaced.
	Current string `json:"current"`
	// Completed are the pods already replaced.
	// +optional
	Completed []string `json:"completed,omitempty"`
}
