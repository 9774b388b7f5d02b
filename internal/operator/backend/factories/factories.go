// Package factories maps scheduler names to the backends this build ships. A new backend
// (KAI, Koordinator, Volcano, the Workload API) is added here and nowhere else: the controllers only
// see the backend.Registry built from these factories.
package factories

import (
	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/grove"
	"github.com/ai-dynamo/grove/internal/operator/backend/kai"
	"github.com/ai-dynamo/grove/internal/operator/backend/koordinator"
	"github.com/ai-dynamo/grove/internal/operator/backend/kube"
	"github.com/ai-dynamo/grove/internal/operator/backend/volcano"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// All returns a fresh map of every backend factory of this build.
func All() map[configv1alpha1.SchedulerName]backend.Factory {
	return map[configv1alpha1.SchedulerName]backend.Factory{
		configv1alpha1.SchedulerNameGrove:       grove.New,
		configv1alpha1.SchedulerNameKube:        kube.New,
		configv1alpha1.SchedulerNameKAI:         kai.New,
		configv1alpha1.SchedulerNameKoordinator: koordinator.New,
		configv1alpha1.SchedulerNameVolcano:     volcano.New,
	}
}

// NewRegistry builds the registry of the backends enabled by the scheduler configuration.
func NewRegistry(cfg configv1alpha1.SchedulerConfiguration) (*backend.Registry, error) {
	return backend.NewRegistry(cfg, All())
}
