package app

import (
	"context"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller"
)

// setupControllers registers the PodCliqueSet, PodCliqueScalingGroup, PodClique and managed
// ClusterTopology controllers, each writing through a client of its own.
func setupControllers(ctx context.Context, mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, registry *backend.Registry) error {
	return controller.SetupWithManager(ctx, mgr, cfg, registry, controller.Options{
		ClientFor: func(name string) (client.Client, error) {
			return controllerClient(mgr.GetConfig(), client.Options{
				Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
				Cache: &client.CacheOptions{Reader: mgr.GetCache()},
			}, name)
		},
	})
}

// controllerClient is a client of one controller, as kube-controller-manager gives each of its
// controllers: reads come from the manager's shared cache, writes go through a client-side rate
// limiter of its own at the configured QPS/burst (runtimeClientConnection), and the requests
// carry the controller's name in the user agent.
func controllerClient(base *rest.Config, opts client.Options, name string) (client.Client, error) {
	cfg := rest.CopyConfig(base)
	cfg.RateLimiter = nil // never share a limiter with the manager's client
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/" + name
	return client.New(cfg, opts)
}
