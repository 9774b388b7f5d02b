package validation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/config/validation"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestUpstreamRenderedConfigurationIsAccepted: a configuration in upstream Grove's exact shape
// decodes strictly, validates, and means here what it means upstream.
func TestUpstreamRenderedConfigurationIsAccepted(t *testing.T) {
	cfg, err := configv1alpha1.Load("testdata/upstream-operator-config.yaml")
	require.NoError(t, err)
	require.Empty(t, validation.ValidateOperatorConfiguration(cfg))

	assert.Equal(t, "application/vnd.kubernetes.protobuf", cfg.ClientConnection.ContentType)
	assert.Equal(t, configv1alpha1.CertProvisionModeManual, cfg.Server.Webhooks.CertProvisionMode, "autoProvision: false is manual mode")
	assert.Equal(t, 2750, cfg.Server.Webhooks.Port)
	assert.Equal(t, ptr.To(5), cfg.Controllers.PodClique.ConcurrentSyncs)
	assert.Equal(t, &configv1alpha1.DebuggingConfiguration{EnableProfiling: ptr.To(true), PprofBindHost: ptr.To("127.0.0.1"), PprofBindPort: ptr.To(2753)}, cfg.Debugging)
	assert.Equal(t, []configv1alpha1.TopologyProfile{{Name: "grove-topology", Levels: []corev1alpha1.TopologyLevel{
		{Domain: "zone", Key: "topology.kubernetes.io/zone"}, {Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
	}}}, cfg.TopologyAwareScheduling.Profiles, "levels become upstream's ClusterTopology grove-topology")
	var names []configv1alpha1.SchedulerName
	for _, p := range cfg.Scheduler.Profiles {
		names = append(names, p.Name)
	}
	assert.Equal(t, []configv1alpha1.SchedulerName{"kai-scheduler", "default-scheduler"}, names, "default-scheduler is enabled although not listed")
	assert.Equal(t, configv1alpha1.SchedulerNameKAI, cfg.Scheduler.DefaultProfileName)
	assert.Equal(t, []string{"authorizer.enabled", "network.autoMNNVLEnabled"}, configv1alpha1.NotImplementedKeys(cfg))
}

func TestConfigurationCompatibilityKeys(t *testing.T) {
	const head = "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
	cases := []struct {
		name       string
		yaml       string
		wantErr    string
		check      func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration)
		wantFields []string
	}{
		{name: "a key neither project knows", yaml: "network:\n  autoMNNVL: true\n", wantErr: `unknown field "network.autoMNNVL"`},
		{name: "a top-level key neither project knows", yaml: "featureGates: {}\n", wantErr: `unknown field "featureGates"`},
		{name: "older upstream mnnvl key, on", yaml: "mnnvl:\n  enabled: true\n", check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
			assert.Equal(t, []string{"mnnvl.enabled"}, configv1alpha1.NotImplementedKeys(cfg))
		}},
		// Upstream's chart renders these features off by default: asking for nothing, they
		// warn of nothing.
		{name: "upstream features left off", yaml: "mnnvl:\n  enabled: false\nnetwork:\n  autoMNNVLEnabled: false\nauthorizer:\n  enabled: false\n",
			check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
				assert.Empty(t, configv1alpha1.NotImplementedKeys(cfg))
			}},
		{name: "several profiles and no default: default-scheduler, as upstream", yaml: "scheduler:\n  profiles: [{name: grove-scheduler}, {name: kai-scheduler}]\n",
			check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
				assert.Equal(t, configv1alpha1.SchedulerNameKube, cfg.Scheduler.DefaultProfileName)
				assert.Equal(t, []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}, {Name: "kai-scheduler"}, {Name: "default-scheduler"}}, cfg.Scheduler.Profiles)
			}},
		{name: "one profile and no default: default-scheduler, as upstream", yaml: "scheduler:\n  profiles: [{name: kai-scheduler}]\n",
			check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
				assert.Equal(t, configv1alpha1.SchedulerNameKube, cfg.Scheduler.DefaultProfileName)
			}},
		{name: "profiling on upstream's host and port keys", yaml: "debugging:\n  enableProfiling: true\n  pprofBindHost: 0.0.0.0\n  pprofBindPort: 6060\n",
			check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
				assert.Equal(t, "0.0.0.0:6060", configv1alpha1.PprofAddress(cfg.Debugging))
			}},
		{name: "both spellings of the profiling address", yaml: "debugging:\n  enableProfiling: true\n  pprofBindAddress: 127.0.0.1:1\n  pprofBindPort: 6060\n",
			wantFields: []string{"debugging.pprofBindAddress"}},
		{name: "bad profiling host and port", yaml: "debugging:\n  enableProfiling: true\n  pprofBindHost: not a host\n  pprofBindPort: 70000\n",
			wantFields: []string{"debugging.pprofBindHost", "debugging.pprofBindPort"}},
		{name: "nothing upstream-only", yaml: "", check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
			assert.Empty(t, configv1alpha1.NotImplementedKeys(cfg))
			assert.Nil(t, cfg.Debugging, "profiling stays off")
			assert.Equal(t, configv1alpha1.CertProvisionModeAuto, cfg.Server.Webhooks.CertProvisionMode)
			assert.Equal(t, []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}, {Name: "default-scheduler"}}, cfg.Scheduler.Profiles)
			assert.Equal(t, configv1alpha1.SchedulerNameGrove, cfg.Scheduler.DefaultProfileName)
		}},
		{name: "default-scheduler listed is not added twice", yaml: "scheduler:\n  profiles: [{name: default-scheduler}]\n", check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
			assert.Equal(t, []configv1alpha1.SchedulerProfile{{Name: "default-scheduler"}}, cfg.Scheduler.Profiles)
		}},
		{name: "profiling with the default address", yaml: "debugging:\n  enableProfiling: true\n", check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
			assert.Equal(t, "127.0.0.1:2753", configv1alpha1.PprofAddress(cfg.Debugging))
		}},
		{name: "bad profiling address", yaml: "debugging:\n  enableProfiling: true\n  pprofBindAddress: nowhere\n", wantFields: []string{"debugging.pprofBindAddress"}},
		{name: "levels ignored with topology-aware scheduling off", yaml: "topologyAwareScheduling:\n  levels: [{domain: rack, key: example.com/rack}]\n",
			check: func(t *testing.T, cfg *configv1alpha1.OperatorConfiguration) {
				assert.Empty(t, cfg.TopologyAwareScheduling.Profiles)
			}},
		{name: "levels and a different grove-topology profile", yaml: `topologyAwareScheduling:
  enabled: true
  levels: [{domain: rack, key: example.com/rack}]
  profiles: [{name: grove-topology, levels: [{domain: host, key: kubernetes.io/hostname}]}]
`, wantFields: []string{"topologyAwareScheduling.levels"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configv1alpha1.Decode([]byte(head + tc.yaml))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			errs := validation.ValidateOperatorConfiguration(cfg)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tc.wantFields, fields, "%v", errs)
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}
