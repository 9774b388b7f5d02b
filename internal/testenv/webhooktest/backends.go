package webhooktest

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/factories"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// SchedulerConfig enables grove-scheduler (the default), default-scheduler, the
// topology-aware kai-scheduler (with a default queue) and volcano (with HyperNode tiers for the
// block and rack keys of the test topologies).
func SchedulerConfig() configv1alpha1.SchedulerConfiguration {
	return configv1alpha1.SchedulerConfiguration{
		Profiles: []configv1alpha1.SchedulerProfile{
			{Name: configv1alpha1.SchedulerNameGrove},
			{Name: configv1alpha1.SchedulerNameKube},
			{Name: configv1alpha1.SchedulerNameKAI, Config: &runtime.RawExtension{Raw: []byte(`{"defaultQueue":"default-queue"}`)}},
			{Name: configv1alpha1.SchedulerNameVolcano, Config: &runtime.RawExtension{Raw: []byte(
				`{"topologyTiers":[{"key":"example.com/block","tier":2},{"key":"example.com/rack","tier":1}]}`)}},
		},
		DefaultProfileName: configv1alpha1.SchedulerNameGrove,
	}
}

// Registry builds and initialises the real backends of SchedulerConfig; c may be nil when
// nothing reads the cluster.
func Registry(ctx context.Context, c client.Client) (*backend.Registry, error) {
	cfg := SchedulerConfig()
	r, err := factories.NewRegistry(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.Init(ctx, backend.InitContext{Client: c, APIReader: c, Logger: logr.Discard()}, cfg); err != nil {
		return nil, err
	}
	return r, nil
}
