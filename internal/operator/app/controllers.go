package app

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller"
)

// setupControllers registers the PodCliqueSet, PodCliqueScalingGroup, PodClique and managed
// ClusterTopology controllers.
func setupControllers(ctx context.Context, mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, registry *backend.Registry) error {
	return controller.SetupWithManager(ctx, mgr, cfg, registry, controller.Options{})
}
