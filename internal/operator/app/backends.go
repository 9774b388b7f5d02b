package app

import (
	"fmt"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/factories"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// newBackendRegistry builds the scheduler backends enabled by scheduler.profiles. A profile
// naming a backend this build does not have stops the operator at start-up.
func newBackendRegistry(cfg *configv1alpha1.OperatorConfiguration) (*backend.Registry, error) {
	r, err := factories.NewRegistry(cfg.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("scheduler.profiles: %w", err)
	}
	return r, nil
}
