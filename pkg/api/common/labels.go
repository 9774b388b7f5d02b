// Package common holds the wire contract shared by Grove's programs and by tools that know
// Grove: label and annotation keys, finalizers, environment variables and object names.
// Every Grove object name is built here; nothing else formats one.
package common

import (
	"sort"
	"strings"
)

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

// GroveKeyPrefix is the prefix of Grove's own label and annotation keys. PodGangs mirror a
// PodCliqueSet's labels and annotations except these.
const GroveKeyPrefix = "grove.io/"

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
	// ComponentStartupWaiterToken: the service-account-token Secrets earlier releases made for
	// the startup waiter. None is made any more (the waiter's token is projected by the
	// kubelet); the label finds the old ones to remove.
	ComponentStartupWaiterToken = "startup-waiter-token"
)

// Startup ordering: pods of a clique that starts after others run the startup waiter
// (`grove-operator wait-for-cliques`) as their first init container, with the token of the
// PodCliqueSet's ServiceAccount mounted into that container only.
const (
	StartupWaiterContainerName   = "grove-startup-waiter"
	StartupWaiterTokenVolumeName = "grove-startup-waiter-token"
)

// Annotations.
const (
	// AnnotationPermitWaitTimeout on a PodGang overrides the Gang plugin's Permit timeout (a Go duration).
	AnnotationPermitWaitTimeout = "grove.io/permit-wait-timeout"
	// AnnotationTopologyName on a PodGang names the ClusterTopology its keys come from.
	AnnotationTopologyName = "grove.io/topology-name"
	// AnnotationAutoMNNVL on a PodCliqueSet (or a clique) asks for Multi-Node NVLink through
	// ComputeDomain resource claims; AnnotationAutoMNNVLEnabled is its "on" value.
	AnnotationAutoMNNVL        = "grove.io/auto-mnnvl"
	AnnotationAutoMNNVLEnabled = "enabled"
	// AnnotationGangTermination on a PodCliqueScalingGroup is the PodCliqueSet controller's
	// request, while gang termination recreates the group's PodCliqueSet replica: its value says
	// why. The scaling group's own controller turns it into the GangTerminationInProgress
	// condition (True while present, False once removed), so the group's status has one writer.
	AnnotationGangTermination = "grove.io/gang-termination"
)

// Field managers of the operator's controllers: each status has one writer, and the
// apiserver's managedFields show which.
const (
	// OperatorFieldManager owns what the PodCliqueSet controller writes: its children's spec and
	// metadata, the PodCliqueSet's status and a PodGang's Initialized condition.
	OperatorFieldManager = "grove-operator"
	// ScalingGroupFieldManager owns what the PodCliqueScalingGroup controller writes, its
	// status included.
	ScalingGroupFieldManager = "grove-operator-podcliquescalinggroup"
	// PodCliqueFieldManager owns what the PodClique controller writes, its status included.
	PodCliqueFieldManager = "grove-operator-podclique"
	// PartialGangFieldManager owns a PodGang's Unhealthy condition, which the operator's
	// partial-gang check applies (a manager of its own, so the Initialized writer and it never
	// remove each other's conditions).
	PartialGangFieldManager = "grove-operator-partial-gang"
	// PodGangReadinessFieldManager owns a PodGang's Ready condition, lastScheduled and
	// lastReady, which the operator derives from the gang's pods whatever the scheduler backend.
	PodGangReadinessFieldManager = "grove-operator-podgang-readiness"
	// NodeFailureFieldManager owns a PodGang's MemberReplacing condition, which the operator's
	// node-failure handling applies.
	NodeFailureFieldManager = "grove-operator-node-failure"
)

// grove-scheduler: what it writes on PodGangs.
const (
	// SchedulerFieldManager owns the fields grove-scheduler writes in PodGang status.
	SchedulerFieldManager = "grove-scheduler"
	// PreemptionFieldManager owns the DisruptionTarget condition grove-scheduler's preemption
	// sets on a PodGang it evicts (a manager of its own, so the Scheduled condition's writer and
	// it never remove each other's conditions).
	PreemptionFieldManager = "grove-scheduler-preemption"
	// EventReasonPreempted is the event on a victim PodGang and its pods, naming the preemptor.
	EventReasonPreempted = "Preempted"
	// ReasonPreempted is the reason of the DisruptionTarget condition of a preempted PodGang.
	ReasonPreempted = "Preempted"
	// ReasonRescheduledAfterPreemption: the DisruptionTarget condition of a preempted PodGang
	// is False again once its recreated pods were placed.
	ReasonRescheduledAfterPreemption = "RescheduledAfterPreemption"
	// EventReasonGangUnschedulable is the event on a PodGang that cannot be placed, saying why in
	// gang terms.
	EventReasonGangUnschedulable = "GangUnschedulable"
	// ReasonUnschedulable is the reason of a False Scheduled condition of a gang that cannot be
	// placed now because the nodes it may use lack room (and of any cause without a reason of
	// its own). The reasons below tell the other causes apart, as data: readers switch on the
	// reason, never on the message's words (IsUnschedulable matches them all).
	ReasonUnschedulable = "Unschedulable"
	// ReasonNoDomainFits: no domain of a required pack level (rack, block...) holds the quorum.
	ReasonNoDomainFits = "NoDomainFits"
	// ReasonReplicaSpreadUnsatisfiable: every domain that would hold the quorum already runs
	// another replica of its spread group (a required replicaSpreadConstraint).
	ReasonReplicaSpreadUnsatisfiable = "ReplicaSpreadUnsatisfiable"
	// ReasonRoleAffinityUnsatisfiable: the quorum would fit, but not with its roles together
	// (a required affinityGroups entry) or apart (a required antiAffinityGroups entry).
	ReasonRoleAffinityUnsatisfiable = "RoleAffinityUnsatisfiable"
	// ReasonFilterRejected: counted capacity holds the quorum, but a filter (affinity, taints,
	// ports, volumes...) rejects the nodes of every candidate domain.
	ReasonFilterRejected = "FilterRejected"
	// ReasonReservedForOtherGang: the room the gang needs is reserved for a gang that has
	// waited longer.
	ReasonReservedForOtherGang = "ReservedForOtherGang"
	// ReasonDevicesUnavailable: the devices its ResourceClaims ask for are not there.
	ReasonDevicesUnavailable = "DevicesUnavailable"
	// ReasonAttemptFailed: an attempt got nodes for the quorum but lost them (Permit timeout, a
	// member rejected or failing to bind); the gang backs off and tries again.
	ReasonAttemptFailed = "AttemptFailed"
	// ReasonWaitingForPods: the PodGang's quorum of pods does not exist (or is still gated), so
	// grove-scheduler has nothing to place yet.
	ReasonWaitingForPods = "WaitingForPods"
	// EventReasonInsufficientDevices is the event on a PodGang whose ResourceClaims need more
	// devices than any domain it may use still offers.
	EventReasonInsufficientDevices = "InsufficientDevices"
	// EventReasonResourceClaimOvershared is the event on a PodGang whose members share a
	// ResourceClaim with more pods than the claim can be reserved for.
	EventReasonResourceClaimOvershared = "ResourceClaimOvershared"
)

// Finalizers.
const (
	FinalizerPodCliqueSet          = "grove.io/podcliqueset.grove.io"
	FinalizerPodClique             = "grove.io/podclique.grove.io"
	FinalizerPodCliqueScalingGroup = "grove.io/podcliquescalinggroup.grove.io"
	// FinalizerClusterTopology lets the ClusterTopology controller remove the backend topology
	// objects Grove manages before the ClusterTopology goes away.
	FinalizerClusterTopology = "grove.io/clustertopology.grove.io"
)

// AnnotationClusterTopologyBinding on a ClusterTopology names the ClusterTopologyBinding it
// was translated from.
const AnnotationClusterTopologyBinding = "grove.io/clustertopologybinding"

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
	// ConditionReady on a PodCliqueSet rolls up its PodGangs: True when every replica's gangs
	// are scheduled and every replica is available (`kubectl wait --for=condition=Ready pcs/x`).
	ConditionReady = "Ready"

	// ConditionPriorityClassNotFound on a PodCliqueSet is True while a PriorityClass its pods
	// name does not exist: the apiserver refuses those pods until it is created.
	ConditionPriorityClassNotFound = "PriorityClassNotFound"
	// ConditionPodCreateFailed on a PodClique is True while the apiserver refuses its pods
	// (reason: the apiserver's status reason, message: its message), e.g. a ServiceAccount that
	// does not exist yet; on a PodCliqueSet, while it is True on one of its PodCliques. There is
	// no condition until a create has failed once.
	ConditionPodCreateFailed = "PodCreateFailed"
	// ReasonPodsCreated: the PodClique's last pod creations succeeded.
	ReasonPodsCreated = "PodsCreated"
	// ConditionPodGangConflict on a PodCliqueSet is True while an object grove-operator does not
	// own holds the name of one of its PodGangs.
	ConditionPodGangConflict = "PodGangConflict"
	// ConditionNameConflict on a PodCliqueSet is True while an object Grove did not create holds
	// the name of one of its children (ServiceAccount, Role, RoleBinding, Service, HPA,
	// PodClique, PodCliqueScalingGroup, ResourceClaim): the object is left alone, never adopted
	// or deleted, and the child is not made.
	ConditionNameConflict = "NameConflict"
	// ConditionUpdateInProgress on a PodCliqueSet, its scaling groups and standalone PodCliques
	// (upstream Grove's): True (Progressing) while a RollingRecreate or Coherent update is under
	// way, Unknown (ProgressDeadlineExceeded) once a component with a
	// rollingUpdate.progressDeadline made no progress for that long, False (NoActiveUpdate)
	// otherwise. The PodCliqueSet's is rolled up from its components'.
	ConditionUpdateInProgress = "UpdateInProgress"
	// ReasonProgressing: the update is under way and moving.
	ReasonProgressing = "Progressing"
	// ReasonNoActiveUpdate: no update is under way.
	ReasonNoActiveUpdate = "NoActiveUpdate"
	// ReasonProgressDeadlineExceeded: a component's update made no progress within its
	// rollingUpdate.progressDeadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

	ReasonInsufficientReadyPods     = "InsufficientReadyPods"
	ReasonSufficientReadyPods       = "SufficientReadyPods"
	ReasonInsufficientScheduledPods = "InsufficientScheduledPods"
	ReasonSufficientScheduledPods   = "SufficientScheduledPods"
	ReasonClusterTopologyNotFound   = "ClusterTopologyNotFound"
	ReasonTopologyNameMissing       = "TopologyNameMissing"
	// ReasonTopologyAwareSchedulingDisabled: the PodCliqueSet has constraints but the operator
	// runs with topologyAwareScheduling disabled (status Unknown).
	ReasonTopologyAwareSchedulingDisabled = "TopologyAwareSchedulingDisabled"
	ReasonTopologyLevelsUnavailable       = "ClusterTopologyLevelsUnavailable"
	ReasonAllTopologyLevelsAvailable      = "AllClusterTopologyLevelsAvailable"

	// Reasons of the PodGang Initialized condition.
	ReasonPodGangPodsCreationPending = "PodGangPodsCreationPending"
	ReasonPodGangPodsCreated         = "PodGangPodsCreated"

	// Reasons of the scaling group's MinAvailableBreached condition.
	ReasonInsufficientScheduledReplicas = "InsufficientScheduledPCSGReplicas"
	ReasonInsufficientAvailableReplicas = "InsufficientAvailablePCSGReplicas"
	ReasonSufficientAvailableReplicas   = "SufficientAvailablePCSGReplicas"

	// Reasons of ConditionGangSchedulingUnavailable on a PodCliqueSet: whether its scheduler
	// backend can place its PodGangs all-or-nothing in this cluster.
	ReasonGangSchedulingNotSupported = "GangSchedulingNotSupported"
	ReasonGangSchedulingSupported    = "GangSchedulingSupported"

	// Reasons of a scaling group's GangTerminationInProgress condition: its PodCliqueSet replica
	// is being recreated because a PodClique of it stayed below minAvailable for terminationDelay.
	ReasonPodCliqueSetReplicaRecreating = "PodCliqueSetReplicaRecreating"
	ReasonPodCliqueSetReplicaRecreated  = "PodCliqueSetReplicaRecreated"

	// Reasons of ConditionReady on a PodCliqueSet; a False one names the first PodGang or
	// replica (in replica order) that holds the PodCliqueSet back.
	ReasonPodCliqueSetReady    = "PodGangsScheduledAndAvailable"
	ReasonPodGangsNotCreated   = "PodGangsNotCreated"
	ReasonPodGangUnschedulable = "PodGangUnschedulable"
	ReasonPodGangNotScheduled  = "PodGangNotScheduled"
	ReasonReplicasUnavailable  = "ReplicasUnavailable"
	ReasonPodCliqueSetDeleting = "Deleting"

	// Reasons of ConditionPriorityClassNotFound (the first is also the event's reason).
	ReasonPriorityClassNotFound = "PriorityClassNotFound"
	ReasonPriorityClassesFound  = "PriorityClassesFound"

	// Reasons of ConditionPodGangConflict (the first is also the event's reason).
	ReasonPodGangNameTaken  = "PodGangNameTaken"
	ReasonPodGangNamesOwned = "PodGangNamesOwned"

	// Reasons of ConditionNameConflict (the first is also the event's reason).
	ReasonChildNameConflict = "ChildNameConflict"
	ReasonChildNamesOwned   = "ChildNamesOwned"

	// Reasons of the PodScheduled=False condition and event grove-scheduler gives a pod whose
	// grove.io/podgang label names a PodGang that does not exist, or whose PodGang has no
	// PodGroup of its grove.io/podclique label.
	ReasonPodGangNotFound  = "PodGangNotFound"
	ReasonPodGroupNotFound = "PodGroupNotFound"

	// Reasons of the Unhealthy condition the operator writes on a PodGang that is partly
	// bound: some members on nodes while a PodGroup lacks minReplicas bound ones.
	// ReasonPartialGangReleased is also the reason of the event when its bound members are
	// deleted to retry the gang whole.
	ReasonPartiallyBound         = "PartiallyBound"
	ReasonPartialGangReleased    = "PartialGangReleased"
	ReasonPartialBindingResolved = "PartialBindingResolved"

	// ConditionMemberReplacing on a PodCliqueSet and on a PodGang is True while grove-operator
	// replaces the pods a failed node took from a replica (the message names the node), and
	// False once the replica is whole again or when its replacement budget is used up.
	ConditionMemberReplacing = "MemberReplacing"
	// Reasons of ConditionMemberReplacing. ReasonNodeFailed and ReasonMembersReplaced are also
	// the reasons of the events on the PodCliqueSet.
	ReasonNodeFailed                 = "NodeFailed"
	ReasonReplacementBackOff         = "ReplacementBackOff"
	ReasonMembersReplaced            = "MembersReplaced"
	ReasonReplacementBudgetExhausted = "ReplacementBudgetExhausted"
	// ReasonPodForceDeleted is the event of a pod force-deleted because its node is gone or
	// unreachable past nodeFailure.grace.
	ReasonPodForceDeleted = "PodForceDeleted"

	// ConditionTranslated on a ClusterTopologyBinding is True while the ClusterTopology of its
	// name is the binding's translation (kept equal to it by grove-operator).
	ConditionTranslated = "Translated"
	// Reasons of ConditionTranslated.
	ReasonClusterTopologyTranslated = "ClusterTopologyTranslated"
	// ReasonClusterTopologyNameTaken: a ClusterTopology of the binding's name exists that
	// the binding does not own; it is left alone and the binding has no effect.
	ReasonClusterTopologyNameTaken = "ClusterTopologyNameTaken"
	// ReasonClusterTopologyBindingInvalid: the binding would translate into a ClusterTopology
	// that admission refuses; nothing is written until the binding changes.
	ReasonClusterTopologyBindingInvalid = "ClusterTopologyBindingInvalid"

	// Reasons of ConditionSchedulerTopologyDrift on a ClusterTopology.
	ReasonSchedulerTopologiesInSync    = "SchedulerTopologiesInSync"
	ReasonSchedulerTopologyDrift       = "SchedulerTopologyDrift"
	ReasonSchedulerTopologySyncFailed  = "SchedulerTopologySyncFailed"
	ReasonSchedulerBackendNotAvailable = "SchedulerBackendNotAvailable"
	ReasonNoTopologyAwareSchedulers    = "NoTopologyAwareSchedulers"
)

// DefaultLabels are put on every object managed for a PodCliqueSet.
func DefaultLabels(pcsName string) map[string]string {
	return map[string]string{LabelManagedByKey: LabelManagedByValue, LabelPartOfKey: pcsName}
}

// ReservedLabelKeys are the grove.io labels grove-operator puts on PodCliques, pods and
// PodGangs to tie them to their gang. A user label with one of these keys on a clique would
// either be overwritten or, where the operator sets the key only on some objects (the base
// PodGang of a scaled replica, the scaling group of a member), mis-attribute the pods: a pod
// waiting for a base PodGang that never lists it stays gated forever. Admission refuses them.
var ReservedLabelKeys = []string{
	LabelPodClique,
	LabelPodGang,
	LabelBasePodGang,
	LabelPodCliqueSetReplicaIndex,
	LabelPodCliqueScalingGroup,
	LabelPodCliqueScalingGroupReplicaIndex,
	LabelPodCliquePodIndex,
	LabelPodTemplateHash,
	LabelPodCliqueSetGenerationHash,
	LabelSchedulerName,
	LabelClusterTopology,
	LabelResourceClaimOwnerKind,
	LabelResourceClaimOwnerName,
	LabelResourceClaimReplicaIndex,
	LabelResourceClaimTemplate,
	LabelSliceIndex,
}

// TotalAnnotationSizeLimit is the apiserver's limit on the annotations of one object (the sum
// of the lengths of keys and values).
const TotalAnnotationSizeLimit = 256 << 10

// PodGangAnnotationReserve is the part of a PodGang's annotation budget kept for what
// grove-operator and its scheduler backend add to the annotations mirrored from the
// PodCliqueSet (topology name, gang termination, the backend's own keys).
const PodGangAnnotationReserve = 8 << 10

// MirroredAnnotationBudget is how large the PodCliqueSet annotations a PodGang mirrors (those
// outside grove.io/, without kubectl's last-applied-configuration) may be.
const MirroredAnnotationBudget = TotalAnnotationSizeLimit - PodGangAnnotationReserve

// AnnotationsSize is the size the apiserver counts against TotalAnnotationSizeLimit.
func AnnotationsSize(annotations map[string]string) int {
	n := 0
	for k, v := range annotations {
		n += len(k) + len(v)
	}
	return n
}

// MirroredAnnotations are the annotations of a PodCliqueSet its PodGangs carry: the keys
// outside grove.io/ except kubectl's last-applied-configuration (a copy of the whole object).
// Over MirroredAnnotationBudget (admission refuses that, but annotation-only updates do not go
// through admission), keys are left out in descending key order until the rest fits, so the
// result is deterministic; dropped names them.
func MirroredAnnotations(annotations map[string]string) (mirrored map[string]string, dropped []string) {
	mirrored = map[string]string{}
	for k, v := range annotations {
		if !strings.HasPrefix(k, GroveKeyPrefix) && k != lastAppliedConfigAnnotation {
			mirrored[k] = v
		}
	}
	size := AnnotationsSize(mirrored)
	if size <= MirroredAnnotationBudget {
		return mirrored, nil
	}
	keys := make([]string, 0, len(mirrored))
	for k := range mirrored {
		keys = append(keys, k)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	for _, k := range keys {
		if size <= MirroredAnnotationBudget {
			break
		}
		size -= len(k) + len(mirrored[k])
		delete(mirrored, k)
		dropped = append(dropped, k)
	}
	return mirrored, dropped
}

const lastAppliedConfigAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// IsUnschedulable reports whether reason is one a False Scheduled condition of a PodGang has
// when grove-scheduler cannot place the gang now (ReasonUnschedulable or one of the reasons that
// tell its cause apart).
func IsUnschedulable(reason string) bool {
	switch reason {
	case ReasonUnschedulable, ReasonNoDomainFits, ReasonFilterRejected, ReasonReservedForOtherGang,
		ReasonDevicesUnavailable, ReasonAttemptFailed, ReasonReservationReuseRequired, ReasonReplicaSpreadUnsatisfiable,
		ReasonSliceUnsatisfiable, ReasonRoleAffinityUnsatisfiable:
		return true
	}
	return false
}
