package app

import (
	"fmt"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/backend"
)

// backendFactories are the scheduler backends this build has, by scheduler name. A profile in
// the configuration that names a backend missing here stops the operator at start-up.
var backendFactories = map[configv1alpha1.SchedulerName]backend.Factory{}

// newBackendRegistry builds the backends enabled by scheduler.profiles.
func newBackendRegistry(cfg *configv1alpha1.OperatorConfiguration) (*backend.Registry, error) {
	r, err := backend.NewRegistry(cfg.Scheduler, backendFactories)
	if err != nil {
		return nil, fmt.Errorf("scheduler.profiles: %w", err)
	}
	return r, nil
}
