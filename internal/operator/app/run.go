package app

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
)

// Scheme holds every kind grove-operator reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, corev1alpha1.AddToScheme, schedv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewLogger builds the structured logger the configuration asks for.
func NewLogger(cfg *configv1alpha1.OperatorConfiguration) logr.Logger {
	opts := zap.Options{Development: cfg.LogFormat == configv1alpha1.LogFormatText}
	switch cfg.LogLevel {
	case configv1alpha1.LogLevelDebug:
		opts.Level = zapLevel(-1)
	case configv1alpha1.LogLevelError:
		opts.Level = zapLevel(2)
	default:
		opts.Level = zapLevel(0)
	}
	return zap.New(zap.UseFlagOptions(&opts))
}

func address(s configv1alpha1.Server) string {
	if s.Port == 0 {
		return "0"
	}
	return net.JoinHostPort(s.BindAddress, strconv.Itoa(s.Port))
}

// warnNotImplemented names the upstream Grove configuration keys that are accepted but do nothing here.
func warnNotImplemented(log logr.Logger, cfg *configv1alpha1.OperatorConfiguration) {
	if keys := configv1alpha1.NotImplementedKeys(cfg); len(keys) > 0 {
		log.Info("WARNING: the configuration sets upstream Grove keys that this operator accepts but does not implement; they have no effect", "keys", keys)
	}
}

// ManagerOptions translates the configuration into controller-runtime manager options.
func ManagerOptions(cfg *configv1alpha1.OperatorConfiguration, scheme *runtime.Scheme) ctrl.Options {
	le := cfg.LeaderElection
	return ctrl.Options{
		Scheme:                        scheme,
		LeaderElection:                le.Enabled,
		LeaderElectionID:              le.ResourceName,
		LeaderElectionNamespace:       le.ResourceNamespace,
		LeaderElectionResourceLock:    le.ResourceLock,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &le.LeaseDuration.Duration,
		RenewDeadline:                 &le.RenewDeadline.Duration,
		RetryPeriod:                   &le.RetryPeriod.Duration,
		HealthProbeBindAddress:        address(cfg.Server.HealthProbes),
		// Like kube-scheduler's: HTTPS (a self-signed certificate unless one is mounted), and
		// only callers the apiserver authenticates and authorises for GET /metrics (the
		// grove-metrics-reader ClusterRole) may read it.
		Metrics: metricsserver.Options{BindAddress: address(cfg.Server.Metrics), SecureServing: true,
			FilterProvider: filters.WithAuthenticationAndAuthorization},
		Cache:            cache.Options{ByObject: controller.CacheByObject()},
		PprofBindAddress: configv1alpha1.PprofAddress(cfg.Debugging),
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: cfg.Server.Webhooks.BindAddress, Port: cfg.Server.Webhooks.Port, CertDir: cfg.Server.Webhooks.ServerCertDir,
		}),
	}
}

// Run starts the manager and blocks until ctx is cancelled.
func Run(ctx context.Context, cfg *configv1alpha1.OperatorConfiguration) error {
	log := NewLogger(cfg)
	ctrl.SetLogger(log)
	warnNotImplemented(log, cfg)
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	// Fail on the configuration before touching the cluster.
	registry, err := newBackendRegistry(cfg)
	if err != nil {
		return err
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = cfg.ClientConnection.QPS, cfg.ClientConnection.Burst
	if cc := cfg.ClientConnection; cc.ContentType != "" || cc.AcceptContentTypes != "" {
		restCfg.ContentType, restCfg.AcceptContentTypes = cc.ContentType, cc.AcceptContentTypes
	}
	mgr, err := ctrl.NewManager(restCfg, ManagerOptions(cfg, scheme))
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := waitForKinds(ctx, mgr.GetRESTMapper(), groveKinds, time.Second, crdWaitTimeout, log); err != nil {
		return err
	}
	if err := grovemetrics.Register(mgr.GetCache()); err != nil {
		return err
	}
	if err := mgr.Add(grovemetrics.TransitionObserver{Cache: mgr.GetCache()}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	// Controllers first: they initialise the backends the webhooks validate with.
	if err := setupControllers(ctx, mgr, cfg, registry); err != nil {
		return err
	}
	if err := setupWebhooks(ctx, mgr, cfg, registry); err != nil {
		return err
	}
	log.Info("starting grove-operator", "schedulerProfiles", cfg.Scheduler.Profiles, "defaultScheduler", cfg.Scheduler.DefaultProfileName)
	return mgr.Start(ctx)
}
