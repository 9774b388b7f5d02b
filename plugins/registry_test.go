package plugins

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
)

// decode runs a KubeSchedulerConfiguration through the decoder kube-scheduler uses for --config.
func decode(t *testing.T, data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	require.True(t, ok, "decoded %T", obj)
	return cfg, nil
}

func argsByName(cfg *schedconfig.KubeSchedulerConfiguration, profile int) map[string]runtime.Object {
	m := map[string]runtime.Object{}
	for _, pc := range cfg.Profiles[profile].PluginConfig {
		m[pc.Name] = pc.Args
	}
	return m
}

func TestShippedSchedulerConfigDecodesIntoTypedArgs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config", "scheduler", "scheduler-config.yaml"))
	require.NoError(t, err)
	cfg, err := decode(t, data)
	require.NoError(t, err)
	require.Len(t, cfg.Profiles, 1)
	assert.Equal(t, "grove-scheduler", cfg.Profiles[0].SchedulerName)
	args := argsByName(cfg, 0)
	require.IsType(t, &pluginargs.GangArgs{}, args["Gang"])
	assert.Equal(t, 60*time.Second, args["Gang"].(*pluginargs.GangArgs).PermitWaitTimeout.Duration)
	require.IsType(t, &pluginargs.TopologyArgs{}, args["Topology"])
	assert.EqualValues(t, 70, args["Topology"].(*pluginargs.TopologyArgs).PreferredDomainWeight)
	require.IsType(t, &pluginargs.DRAArgs{}, args["DRA"])
	assert.EqualValues(t, 256, args["DRA"].(*pluginargs.DRAArgs).ReservedForLimit)
}

func TestArgsGetDefaultsWhenOmitted(t *testing.T) {
	cfg, err := decode(t, []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: grove-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Gang}, {name: Topology}, {name: DRA}]
  pluginConfig:
  - name: Gang
    args: {permitWaitTimeout: 2m}
`))
	require.NoError(t, err)
	args := argsByName(cfg, 0)
	gang := args["Gang"].(*pluginargs.GangArgs)
	assert.Equal(t, 2*time.Minute, gang.PermitWaitTimeout.Duration, "a set value is kept")
	assert.Equal(t, 30*time.Second, gang.MaxBackoff.Duration, "an omitted field is defaulted")
	assert.Equal(t, 30*time.Second, gang.ReservationDelay.Duration, "an omitted field is defaulted")
	// Enabled plugins without a pluginConfig entry get defaulted args too.
	require.IsType(t, &pluginargs.TopologyArgs{}, args["Topology"])
	assert.EqualValues(t, 70, args["Topology"].(*pluginargs.TopologyArgs).PreferredDomainWeight)
	require.IsType(t, &pluginargs.DRAArgs{}, args["DRA"])
	assert.EqualValues(t, 256, args["DRA"].(*pluginargs.DRAArgs).ReservedForLimit)
}

func TestUnknownArgsFieldIsAnError(t *testing.T) {
	_, err := decode(t, []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: grove-scheduler
  pluginConfig:
  - name: Gang
    args: {permitWaitTimeot: 2m}
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permitWaitTimeot")
}

func TestPluginFactoriesRejectInvalidArgs(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		name string
		args runtime.Object
		want string
	}{
		{"Gang", &pluginargs.GangArgs{PermitWaitTimeout: durationOf(20 * time.Minute), MaxBackoff: durationOf(time.Second)}, "pluginConfig[Gang].args.permitWaitTimeout"},
		{"Gang", &pluginargs.GangArgs{PermitWaitTimeout: durationOf(time.Minute), MaxBackoff: durationOf(time.Second), ReservationDelay: durationOf(-time.Second)}, "pluginConfig[Gang].args.reservationDelay"},
		{"Topology", &pluginargs.TopologyArgs{PreferredDomainWeight: 101}, "pluginConfig[Topology].args.preferredDomainWeight"},
		{"DRA", &pluginargs.DRAArgs{ReservedForLimit: 257}, "pluginConfig[DRA].args.reservedForLimit"},
	}
	reg := Registry()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reg[tc.name](ctx, tc.args, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
