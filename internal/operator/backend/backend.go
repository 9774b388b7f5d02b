// Package backend is the scheduler backend framework: grove-operator hands every PodGang to
// the backend chosen by its pods' schedulerName. Backends live in sub-packages
// (grove, kube, kai, koordinator, volcano) and plug in through Factory without touching controllers.
package backend

import (
	"context"
	"encoding/json"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Backend hands PodGangs to one scheduler.
type Backend interface {
	// Name is the backend's scheduler name (also the pods' spec.schedulerName).
	Name() configv1alpha1.SchedulerName
	// Init prepares the backend once at operator start-up (e.g. discovers optional APIs).
	Init(ctx context.Context, ic InitContext) error
	// SyncPodGang creates or updates the scheduler-specific objects of a PodGang. It runs on
	// PodGang create and spec change and must be idempotent.
	SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error
	// PreparePod adjusts a pod before it is created (schedulerName, labels, annotations).
	PreparePod(pod *corev1.Pod, pg PodGangRef)
	// ValidatePodCliqueSet rejects, at admission, what this scheduler cannot honour.
	ValidatePodCliqueSet(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) (warnings []string, errs field.ErrorList)
}

// TopologyAwareBackend is a backend with its own topology object per ClusterTopology (KAI Topology, Koordinator ClusterNetworkTopology).
// A topology object Grove manages for a ClusterTopology has the ClusterTopology's name; an
// externally managed one is named by the ClusterTopology's schedulerReferences.
type TopologyAwareBackend interface {
	Backend
	// TopologyGVR is the resource of the backend's topology object.
	TopologyGVR() schema.GroupVersionResource
	// SyncTopology creates or updates the topology object Grove manages for a ClusterTopology.
	SyncTopology(ctx context.Context, ct *corev1alpha1.ClusterTopology) error
	// OnTopologyDelete removes the topology object Grove managed for a ClusterTopology.
	OnTopologyDelete(ctx context.Context, ct *corev1alpha1.ClusterTopology) error
	// CheckTopologyDrift compares an externally managed topology object with the ClusterTopology.
	CheckTopologyDrift(ctx context.Context, ct *corev1alpha1.ClusterTopology, reference string) (DriftResult, error)
}

// ReferenceOnlyTopologyBackend is a TopologyAwareBackend whose topology object Grove never
// creates, because the scheduler keeps one cluster-wide object that its operator owns (e.g.
// Koordinator's ClusterNetworkTopology). Grove only checks a referenced object for drift;
// SyncTopology and OnTopologyDelete are not called for it.
type ReferenceOnlyTopologyBackend interface {
	TopologyAwareBackend
	// ReferenceOnlyTopology marks the backend; it does nothing.
	ReferenceOnlyTopology()
}

// PodGangMetadataProvider is a backend that needs labels or annotations of its own on the
// PodGangs of a PodCliqueSet (e.g. KAI's queue). The PodCliqueSet controller adds them on top
// of the PodCliqueSet's own labels and annotations, which every PodGang mirrors, and below
// Grove's grove.io/ keys.
type PodGangMetadataProvider interface {
	PodGangMetadata(pcs *corev1alpha1.PodCliqueSet) (labels, annotations map[string]string)
}

// UngatedMembers is a backend whose scheduler holds a PodGang's pods back by itself until the
// PodGang exists and lists them (grove-scheduler's gang plugin, at PreEnqueue). Its pods are
// created without Grove's scheduling gate, which saves the gate-removal PATCH of every pod;
// every other backend's pods carry the gate until their PodGang lists them.
type UngatedMembers interface {
	// HoldsUnlistedMembers marks the backend; it does nothing.
	HoldsUnlistedMembers()
}

// Gates reports whether pods of backend b are created with Grove's scheduling gate (b may be
// nil: gated).
func Gates(b Backend) bool {
	_, ungated := b.(UngatedMembers)
	return !ungated
}

// GangCapabilityReporter is a backend whose gang semantics depend on what the cluster
// serves (e.g. default-scheduler without the Workload API). The PodCliqueSet controller reports
// the answer as the GangSchedulingUnavailable condition of the PodCliqueSets on that backend;
// a backend that does not implement it always schedules gangs.
type GangCapabilityReporter interface {
	// GangSchedulingAvailable tells whether PodGangs are placed all-or-nothing, and explains
	// how (or why not). It is fixed once Init has run.
	GangSchedulingAvailable() (available bool, message string)
}

// DriftResult is the outcome of comparing a backend topology object with a ClusterTopology.
type DriftResult struct {
	// Found is false when the referenced object does not exist.
	Found bool
	// InSync is true when the keys are the same, in the same order.
	InSync bool
	// ObservedGeneration of the backend object (0 when not found).
	ObservedGeneration int64
	// Message explains a difference.
	Message string
}

// PodGangRef tells PreparePod which PodGang (and PodGroup) a pod belongs to.
type PodGangRef struct {
	// Name of the PodGang.
	Name string
	// PodGroup is the name of the pod's PodGroup (its PodClique).
	PodGroup string
	// SharedGroup is the group of PodGangs that share the PodCliqueSet replica's required
	// domain (the replica's base PodGang), when that domain spans PodGangs (see
	// ReplicaWideRequired); empty otherwise. A backend that schedules such a group as one unit
	// points the pod at it.
	SharedGroup string
}

// InitContext is what a backend gets at start-up.
type InitContext struct {
	// Client is the operator's cached client.
	Client client.Client
	// APIReader reads straight from the apiserver.
	APIReader client.Reader
	// Discovery tells which APIs the cluster serves.
	Discovery discovery.DiscoveryInterface
	// Recorder emits events.
	Recorder events.EventRecorder
	// Logger is the backend's logger.
	Logger logr.Logger
	// Config is the profile's raw backend-specific configuration (may be nil).
	Config json.RawMessage
}

// Reader is APIReader, or Client when there is none (tests that give a backend one client).
func (ic InitContext) Reader() client.Reader {
	if ic.APIReader != nil {
		return ic.APIReader
	}
	return ic.Client
}

// Factory builds a backend.
type Factory func() Backend
