package validation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func defaulted(mutate func(*configv1alpha1.OperatorConfiguration)) *configv1alpha1.OperatorConfiguration {
	c := &configv1alpha1.OperatorConfiguration{}
	if mutate != nil {
		mutate(c)
	}
	configv1alpha1.SetDefaults_OperatorConfiguration(c)
	return c
}

func TestDefaultedEmptyConfigurationIsValid(t *testing.T) {
	c := defaulted(nil)
	require.Empty(t, ValidateOperatorConfiguration(c))
	assert.Equal(t, configv1alpha1.SchedulerNameGrove, c.Scheduler.DefaultProfileName)
	assert.Equal(t, configv1alpha1.CertProvisionModeAuto, c.Server.Webhooks.CertProvisionMode)
	assert.Equal(t, 15*time.Second, c.LeaderElection.LeaseDuration.Duration)
	assert.Equal(t, configv1alpha1.DefaultConcurrentSyncs, *c.Controllers.PodClique.ConcurrentSyncs)
	assert.Equal(t, configv1alpha1.DefaultPartialBindingTimeout, c.PodGang.PartialBindingTimeout.Duration)
	assert.Equal(t, configv1alpha1.DefaultNodeFailureGrace, c.NodeFailure.Grace.Duration)
	assert.True(t, *c.NodeFailure.ForceDeletePods)
	assert.Equal(t, configv1alpha1.DefaultNodeFailureMaxReplacements, *c.NodeFailure.MaxReplacements)
}

func TestDefaultsKeepSetValues(t *testing.T) {
	c := defaulted(func(c *configv1alpha1.OperatorConfiguration) {
		c.Server.Webhooks.Port = 10443
		c.LogFormat = configv1alpha1.LogFormatText
		c.Scheduler.Profiles = []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameKAI}}
		c.Controllers.PodCliqueSet.ConcurrentSyncs = ptr.To(9)
		c.PodGang.PartialBindingTimeout = metav1.Duration{Duration: 30 * time.Second}
		c.NodeFailure.ForceDeletePods = ptr.To(false)
		c.NodeFailure.MaxReplacements = ptr.To[int32](0)
	})
	assert.False(t, *c.NodeFailure.ForceDeletePods, "force delete can be turned off")
	assert.Zero(t, *c.NodeFailure.MaxReplacements, "a budget of 0 turns replacement off")
	assert.Equal(t, 30*time.Second, c.PodGang.PartialBindingTimeout.Duration)
	assert.Equal(t, 10443, c.Server.Webhooks.Port)
	assert.Equal(t, configv1alpha1.LogFormatText, c.LogFormat)
	assert.Equal(t, configv1alpha1.SchedulerNameKube, c.Scheduler.DefaultProfileName, "profiles without a default name default-scheduler, as upstream")
	assert.Equal(t, 9, *c.Controllers.PodCliqueSet.ConcurrentSyncs)
}

func TestValidationReportsFieldPaths(t *testing.T) {
	levels := []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "topology.kubernetes.io/zone"}}
	cases := []struct {
		name   string
		mutate func(*configv1alpha1.OperatorConfiguration)
		field  string
		typ    field.ErrorType
	}{
		{"negative qps", func(c *configv1alpha1.OperatorConfiguration) { c.ClientConnection.QPS = -1 }, "runtimeClientConnection.qps", field.ErrorTypeInvalid},
		{"lease not above renew", func(c *configv1alpha1.OperatorConfiguration) {
			c.LeaderElection.Enabled = true
			c.LeaderElection.LeaseDuration = metav1.Duration{Duration: time.Second}
			c.LeaderElection.RenewDeadline = metav1.Duration{Duration: 2 * time.Second}
		}, "leaderElection.leaseDuration", field.ErrorTypeInvalid},
		{"unsupported lock", func(c *configv1alpha1.OperatorConfiguration) {
			c.LeaderElection.Enabled = true
			c.LeaderElection.ResourceLock = "configmaps"
		}, "leaderElection.resourceLock", field.ErrorTypeNotSupported},
		{"webhook port out of range", func(c *configv1alpha1.OperatorConfiguration) { c.Server.Webhooks.Port = 70000 }, "server.webhooks.port", field.ErrorTypeInvalid},
		{"unknown cert mode", func(c *configv1alpha1.OperatorConfiguration) { c.Server.Webhooks.CertProvisionMode = "magic" }, "server.webhooks.certProvisionMode", field.ErrorTypeNotSupported},
		{"metrics port clashes", func(c *configv1alpha1.OperatorConfiguration) {
			c.Server.Metrics.Port = configv1alpha1.DefaultWebhookPort
		}, "server.metrics.port", field.ErrorTypeDuplicate},
		{"zero concurrency", func(c *configv1alpha1.OperatorConfiguration) { c.Controllers.PodClique.ConcurrentSyncs = ptr.To(0) }, "controllers.podClique.concurrentSyncs", field.ErrorTypeInvalid},
		{"negative partial-binding timeout", func(c *configv1alpha1.OperatorConfiguration) {
			c.PodGang.PartialBindingTimeout = metav1.Duration{Duration: -time.Second}
		}, "podGang.partialBindingTimeout", field.ErrorTypeInvalid},
		{"negative node-failure grace", func(c *configv1alpha1.OperatorConfiguration) {
			c.NodeFailure.Grace = metav1.Duration{Duration: -time.Second}
		}, "nodeFailure.grace", field.ErrorTypeInvalid},
		{"max back-off below initial", func(c *configv1alpha1.OperatorConfiguration) {
			c.NodeFailure.InitialBackOff = metav1.Duration{Duration: time.Minute}
			c.NodeFailure.MaxBackOff = metav1.Duration{Duration: time.Second}
		}, "nodeFailure.maxBackOff", field.ErrorTypeInvalid},
		{"negative replacement budget", func(c *configv1alpha1.OperatorConfiguration) {
			c.NodeFailure.MaxReplacements = ptr.To[int32](-1)
		}, "nodeFailure.maxReplacements", field.ErrorTypeInvalid},
		{"bad log level", func(c *configv1alpha1.OperatorConfiguration) { c.LogLevel = "loud" }, "logLevel", field.ErrorTypeNotSupported},
		{"bad log format", func(c *configv1alpha1.OperatorConfiguration) { c.LogFormat = "xml" }, "logFormat", field.ErrorTypeNotSupported},
		{"unknown scheduler", func(c *configv1alpha1.OperatorConfiguration) {
			c.Scheduler.Profiles = []configv1alpha1.SchedulerProfile{{Name: "my-scheduler"}}
			c.Scheduler.DefaultProfileName = "my-scheduler"
		}, "scheduler.profiles[0].name", field.ErrorTypeNotSupported},
		{"proprietary scheduler", func(c *configv1alpha1.OperatorConfiguration) {
			c.Scheduler.Profiles = []configv1alpha1.SchedulerProfile{{Name: "lpx-scheduler"}}
			c.Scheduler.DefaultProfileName = "lpx-scheduler"
		}, "scheduler.profiles[0].name", field.ErrorTypeInvalid},
		{"duplicate scheduler", func(c *configv1alpha1.OperatorConfiguration) {
			c.Scheduler.Profiles = []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}, {Name: "grove-scheduler"}}
			c.Scheduler.DefaultProfileName = "grove-scheduler"
		}, "scheduler.profiles[1].name", field.ErrorTypeDuplicate},
		{"default not among profiles", func(c *configv1alpha1.OperatorConfiguration) {
			c.Scheduler.Profiles = []configv1alpha1.SchedulerProfile{{Name: "grove-scheduler"}}
			c.Scheduler.DefaultProfileName = "kai-scheduler"
		}, "scheduler.defaultProfileName", field.ErrorTypeInvalid},
		{"topology profiles while disabled", func(c *configv1alpha1.OperatorConfiguration) {
			c.TopologyAwareScheduling.Profiles = []configv1alpha1.TopologyProfile{{Name: "t", Levels: levels}}
		}, "topologyAwareScheduling.profiles", field.ErrorTypeForbidden},
		{"topology profile bad name", func(c *configv1alpha1.OperatorConfiguration) {
			c.TopologyAwareScheduling.Enabled = true
			c.TopologyAwareScheduling.Profiles = []configv1alpha1.TopologyProfile{{Name: "Bad_Name", Levels: levels}}
		}, "topologyAwareScheduling.profiles[0].name", field.ErrorTypeInvalid},
		{"topology profile duplicate domain", func(c *configv1alpha1.OperatorConfiguration) {
			c.TopologyAwareScheduling.Enabled = true
			c.TopologyAwareScheduling.Profiles = []configv1alpha1.TopologyProfile{{Name: "t", Levels: []corev1alpha1.TopologyLevel{
				{Domain: "zone", Key: "a"}, {Domain: "zone", Key: "b"}}}}
		}, "topologyAwareScheduling.profiles[0].levels[1].domain", field.ErrorTypeDuplicate},
		{"topology profile no levels", func(c *configv1alpha1.OperatorConfiguration) {
			c.TopologyAwareScheduling.Enabled = true
			c.TopologyAwareScheduling.Profiles = []configv1alpha1.TopologyProfile{{Name: "t"}}
		}, "topologyAwareScheduling.profiles[0].levels", field.ErrorTypeRequired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateOperatorConfiguration(defaulted(tc.mutate))
			require.NotEmpty(t, errs)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
				if e.Field == tc.field {
					assert.Equal(t, tc.typ, e.Type)
					return
				}
			}
			t.Fatalf("no error at %s; got %v", tc.field, paths)
		})
	}
}

func TestDecodeIsStrictAndDefaults(t *testing.T) {
	cfg, err := configv1alpha1.Decode([]byte(`
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  profiles:
  - name: grove-scheduler
  - name: kai-scheduler
    config: {queue: default}
  defaultProfileName: grove-scheduler
topologyAwareScheduling:
  enabled: true
`))
	require.NoError(t, err)
	assert.Len(t, cfg.Scheduler.Profiles, 3, "default-scheduler is always enabled")
	assert.JSONEq(t, `{"queue":"default"}`, string(cfg.Scheduler.Profiles[1].Config.Raw))
	assert.Equal(t, configv1alpha1.DefaultWebhookPort, cfg.Server.Webhooks.Port, "defaults applied on decode")
	require.Empty(t, ValidateOperatorConfiguration(cfg))

	_, err = configv1alpha1.Decode([]byte("apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\nschedulr: {}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "schedulr"`)

	_, err = configv1alpha1.Decode([]byte("apiVersion: v1\nkind: ConfigMap\n"))
	require.Error(t, err, "a document of another kind is rejected")
}
