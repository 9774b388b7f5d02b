package app

import (
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/backend"
	"github.com/ai-dynamo/grove/pkg/backend/factories"
)

// newBackendRegistry builds the scheduler backends enabled by scheduler.profiles.
func newBackendRegistry(cfg *configv1alpha1.OperatorConfiguration) (*backend.Registry, error) {
	return factories.NewRegistry(cfg.Scheduler)
}
