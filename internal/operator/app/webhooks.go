package app

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/cert"
	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// certSyncBackoff bounds how long start-up waits for the apiserver to store the webhook
// certificates (about 30 s) before the operator gives up.
var certSyncBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 6}

// setupWebhooks provides the webhook server's certificate and registers the admission
// webhooks. The server reads its certificate when the manager starts it, so in auto mode the
// certificates are created (or reused) here, before; in manual mode they must be mounted.
// Readiness reports the webhook server.
func setupWebhooks(ctx context.Context, mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, registry *backend.Registry, extra ...func(*cert.Options)) error {
	wh := cfg.Server.Webhooks
	switch wh.CertProvisionMode {
	case configv1alpha1.CertProvisionModeManual:
		if err := cert.CheckMounted(wh.ServerCertDir); err != nil {
			return err
		}
	default:
		c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return err
		}
		opts := certOptions(wh)
		for _, f := range extra {
			f(&opts)
		}
		p, err := cert.NewProvisioner(c, opts, mgr.GetLogger().WithName("webhook-certs"))
		if err != nil {
			return err
		}
		var lastErr error
		err = wait.ExponentialBackoffWithContext(ctx, certSyncBackoff, func(ctx context.Context) (bool, error) {
			lastErr = p.Sync(ctx)
			return lastErr == nil, nil
		})
		if err != nil {
			return fmt.Errorf("provisioning the webhook certificates (certProvisionMode auto): %w", lastErr)
		}
		if err := mgr.Add(p); err != nil {
			return err
		}
	}
	err := webhook.Register(mgr, webhook.Options{
		TopologyAwareScheduling: cfg.TopologyAwareScheduling.Enabled,
		Backends:                registry,
		Reader:                  mgr.GetAPIReader(),
		Client:                  mgr.GetClient(),
	})
	if err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker())
}

// certOptions derives certificate provisioning from the webhook server configuration. A
// specific bind address is also put into the certificate so an apiserver outside the
// operator's cluster network (a local control plane) can call the server by address.
func certOptions(wh configv1alpha1.WebhookServer) cert.Options {
	opts := cert.Options{
		CertDir:                         wh.ServerCertDir,
		SecretName:                      wh.SecretName,
		Namespace:                       wh.Namespace,
		ServiceName:                     wh.ServiceName,
		MutatingWebhookConfigurations:   []string{common.MutatingWebhookConfigurationName},
		ValidatingWebhookConfigurations: []string{common.ValidatingWebhookConfigurationName},
	}
	if ip := net.ParseIP(wh.BindAddress); ip != nil && !ip.IsUnspecified() {
		opts.IPAddresses = []net.IP{ip}
	}
	return opts
}
