// Package common holds the wire contract shared by Grove's programs and by tools that know
// Grove: label and annotation keys, finalizers, environment variables and object names.
// Every Grove object name is built here; nothing else formats one.
package common

// Label keys put on objects that grove-operator manages.
const (
	LabelAppNameKey                        = "app.kubernetes.io/name"
	LabelManagedByKey                      = "app.kubernetes.io/managed-by"
	LabelManagedByValue                    = "grove-operator"
	LabelPartOfKey                         = "app.kubernetes.io/part-of"
	LabelComponentKey                      = "app.kubernetes.io/component"
	LabelPodClique                         = "grove.io/podclique"
	LabelPodGang                           = "grove.io/podgang"
	LabelBasePodGang                       = "grove.io/base-podgang"
	LabelPodCliqueSetReplicaIndex          = "grove.io/podcliqueset-replica-index"
	LabelPodCliqueScalingGroup             = "grove.io/podcliquescalinggroup"
	LabelPodCliqueScalingGroupReplicaIndex = "grove.io/podcliquescalinggroup-replica-index"
	LabelPodCliquePodIndex                 = "grove.io/podclique-pod-index"
	LabelPodTemplateHash                   = "grove.io/pod-template-hash"
	LabelPodCliqueSetGenerationHash        = "grove.io/podcliqueset-generation-hash"
	LabelSchedulerName                     = "grove.io/scheduler-name"
	LabelClusterTopology                   = "grove.io/cluster-topology"
	// Resource sharing: which object owns a ResourceClaim and for which replica it is.
	LabelResourceClaimOwnerKind    = "grove.io/resource-claim-owner-kind"
	LabelResourceClaimOwnerName    = "grove.io/resource-claim-owner-name"
	LabelResourceClaimReplicaIndex = "grove.io/resource-claim-replica-index"
	LabelResourceClaimTemplate     = "grove.io/resource-claim-template"
)

// Values of LabelComponentKey.
const (
	ComponentHeadlessService       = "pcs-headless-service"
	ComponentPodRole               = "pod-role"
	ComponentPodRoleBinding        = "pod-role-binding"
	ComponentPodServiceAccount     = "pod-service-account"
	ComponentPodCliqueScalingGroup = "pcs-podcliquescalinggroup"
	ComponentHPA                   = "pcs-hpa"
	ComponentPodGang               = "podgang"
	ComponentPCSPodClique          = "pcs-podclique"
	ComponentPCSGPodClique         = "pcsg-podclique"
	ComponentResourceClaim         = "resource-claim"
)

// Annotations.
const (
	// AnnotationPermitWaitTimeout on a PodGang overrides the Gang plugin's Permit timeout (a Go duration).
	AnnotationPermitWaitTimeout = "grove.io/permit-wait-timeout"
	// AnnotationTopologyName on a PodGang names the ClusterTopology its keys come from.
	AnnotationTopologyName = "grove.io/topology-name"
)

// grove-scheduler: what it writes on PodGangs.
const (
	// SchedulerFieldManager owns the fields grove-scheduler writes in PodGang status.
	SchedulerFieldManager = "grove-scheduler"
	// EventReasonGangUnschedulable is the event on a PodGang that cannot be placed, saying why in
	// gang terms.
	EventReasonGangUnschedulable = "GangUnschedulable"
	// ReasonUnschedulable is the reason of a False Scheduled condition of a gang that cannot be
	// placed now.
	ReasonUnschedulable = "Unschedulable"
)

// Finalizers.
const (
	FinalizerPodCliqueSet          = "grove.io/podcliqueset.grove.io"
	FinalizerPodClique             = "grove.io/podclique.grove.io"
	FinalizerPodCliqueScalingGroup = "grove.io/podcliquescalinggroup.grove.io"
)

// SchedulingGatePodGangPendingCreation keeps a pod from being scheduled until its PodGang lists it.
const SchedulingGatePodGangPendingCreation = "grove.io/podgang-pending-creation"

// Environment variables given to every Grove pod for peer discovery.
const (
	EnvPodCliqueSetName                     = "GROVE_PCS_NAME"
	EnvPodCliqueSetIndex                    = "GROVE_PCS_INDEX"
	EnvPodCliqueName                        = "GROVE_PCLQ_NAME"
	EnvHeadlessService                      = "GROVE_HEADLESS_SERVICE"
	EnvPodIndex                             = "GROVE_PCLQ_POD_INDEX"
	EnvPodCliqueScalingGroupName            = "GROVE_PCSG_NAME"
	EnvPodCliqueScalingGroupIndex           = "GROVE_PCSG_INDEX"
	EnvPodCliqueScalingGroupTemplateNumPods = "GROVE_PCSG_TEMPLATE_NUM_PODS"
)

// Condition types and reasons.
const (
	ConditionMinAvailableBreached      = "MinAvailableBreached"
	ConditionPodCliqueScheduled        = "PodCliqueScheduled"
	ConditionTopologyLevelsUnavailable = "TopologyLevelsUnavailable"
	ConditionGangTerminationInProgress = "GangTerminationInProgress"
	ConditionSchedulerTopologyDrift    = "SchedulerTopologyDrift"
	ConditionGangSchedulingUnavailable = "GangSchedulingUnavailable"

	ReasonInsufficientReadyPods      = "InsufficientReadyPods"
	ReasonSufficientReadyPods        = "SufficientReadyPods"
	ReasonInsufficientScheduledPods  = "InsufficientScheduledPods"
	ReasonSufficientScheduledPods    = "SufficientScheduledPods"
	ReasonClusterTopologyNotFound    = "ClusterTopologyNotFound"
	ReasonTopologyLevelsUnavailable  = "ClusterTopologyLevelsUnavailable"
	ReasonAllTopologyLevelsAvailable = "AllClusterTopologyLevelsAvailable"
)

// DefaultLabels are put on every object managed for a PodCliqueSet.
func DefaultLabels(pcsName string) map[string]string {
	return map[string]string{LabelManagedByKey: LabelManagedByValue, LabelPartOfKey: pcsName}
}
