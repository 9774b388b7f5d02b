package webhooktest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/backend"
)

// Stand-in scheduler backends until pkg/backend ships real ones. Only admission matters here:
//   - grove-scheduler accepts everything,
//   - default-scheduler rejects topology constraints (no gang/topology support yet),
//   - kai-scheduler is topology-aware (it may be referenced by ClusterTopologies).

// Backend is a scheduler backend that admits everything except what Reject returns.
type Backend struct {
	SchedulerName configv1alpha1.SchedulerName
	Reject        func(*corev1alpha1.PodCliqueSet) field.ErrorList
}

var _ backend.Backend = &Backend{}

// Name is the scheduler name.
func (b *Backend) Name() configv1alpha1.SchedulerName { return b.SchedulerName }

// Init does nothing.
func (b *Backend) Init(context.Context, backend.InitContext) error { return nil }

// SyncPodGang does nothing.
func (b *Backend) SyncPodGang(context.Context, *schedv1alpha1.PodGang) error { return nil }

// PreparePod sets the scheduler name.
func (b *Backend) PreparePod(pod *corev1.Pod, _ backend.PodGangRef) {
	pod.Spec.SchedulerName = string(b.SchedulerName)
}

// ValidatePodCliqueSet applies Reject.
func (b *Backend) ValidatePodCliqueSet(_ context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	if b.Reject == nil {
		return nil, nil
	}
	return nil, b.Reject(pcs)
}

// TopologyAwareBackend is a Backend with a topology object.
type TopologyAwareBackend struct{ Backend }

var _ backend.TopologyAwareBackend = &TopologyAwareBackend{}

// TopologyGVR is a made-up resource.
func (b *TopologyAwareBackend) TopologyGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "topologies"}
}

// SyncTopology does nothing.
func (b *TopologyAwareBackend) SyncTopology(context.Context, *corev1alpha1.ClusterTopology) error {
	return nil
}

// OnTopologyDelete does nothing.
func (b *TopologyAwareBackend) OnTopologyDelete(context.Context, *corev1alpha1.ClusterTopology) error {
	return nil
}

// CheckTopologyDrift reports no drift.
func (b *TopologyAwareBackend) CheckTopologyDrift(context.Context, *corev1alpha1.ClusterTopology, string) (backend.DriftResult, error) {
	return backend.DriftResult{Found: true, InSync: true}, nil
}

// RejectTopologyConstraints is default-scheduler's admission rule until it supports gangs.
func RejectTopologyConstraints(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	if pcs.Spec.Template.TopologyConstraint == nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "template", "topologyConstraint"),
		"default-scheduler cannot honour topology constraints yet")}
}

// Factories are the stand-in backends by scheduler name.
var Factories = map[configv1alpha1.SchedulerName]backend.Factory{
	configv1alpha1.SchedulerNameGrove: func() backend.Backend { return &Backend{SchedulerName: configv1alpha1.SchedulerNameGrove} },
	configv1alpha1.SchedulerNameKube: func() backend.Backend {
		return &Backend{SchedulerName: configv1alpha1.SchedulerNameKube, Reject: RejectTopologyConstraints}
	},
	configv1alpha1.SchedulerNameKAI: func() backend.Backend {
		return &TopologyAwareBackend{Backend{SchedulerName: configv1alpha1.SchedulerNameKAI}}
	},
}

// Registry enables grove-scheduler (the default), default-scheduler and kai-scheduler.
func Registry() (*backend.Registry, error) {
	return backend.NewRegistry(configv1alpha1.SchedulerConfiguration{
		Profiles: []configv1alpha1.SchedulerProfile{
			{Name: configv1alpha1.SchedulerNameGrove}, {Name: configv1alpha1.SchedulerNameKube}, {Name: configv1alpha1.SchedulerNameKAI},
		},
		DefaultProfileName: configv1alpha1.SchedulerNameGrove,
	}, Factories)
}
