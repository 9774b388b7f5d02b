package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
)

// enabledAtRun runs the command with args up to where the scheduler would start and reports
// whether NominatedNodeNameForExpectation is on then.
func enabledAtRun(t *testing.T, args ...string) bool {
	t.Helper()
	cmd, err := newCommand()
	require.NoError(t, err)
	var enabled bool
	cmd.RunE = func(*cobra.Command, []string) error {
		enabled = utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation)
		return nil
	}
	cmd.SetArgs(args)
	require.NoError(t, cmd.Execute())
	return enabled
}

func TestNominatedNodeNameForExpectationIsOffByDefaultButCanBeTurnedOn(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.NominatedNodeNameForExpectation, true)
	assert.False(t, enabledAtRun(t), "grove-scheduler's default")
	assert.True(t, enabledAtRun(t, "--feature-gates=NominatedNodeNameForExpectation=true"), "the flag wins")
}

func TestVersionPrintsGroveAndKubernetes(t *testing.T) {
	cmd, err := newCommand()
	require.NoError(t, err)
	// --version lives in a process-global flag set: put it back for the other tests.
	t.Cleanup(func() { require.NoError(t, cmd.Flags().Set("version", "false")) })
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	require.NoError(t, cmd.Execute())
	// The scheduler links kube-scheduler 1.37: that is the Kubernetes version it reports.
	assert.Regexp(t, `^grove-scheduler v\S+ \(Kubernetes v1\.37\.\d+, go\S+ \w+/\w+\)\n$`, out.String())
}

// A profile that enables Topology without Gang is refused before the scheduler starts, with the
// field that enables it.
func TestConfigWithTopologyButNoGangIsRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
- schedulerName: grove-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Topology}]
`), 0o600))
	cmd, err := newCommand()
	require.NoError(t, err)
	cmd.SetArgs([]string{"--config", path})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err = cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `profiles[1].plugins.multiPoint.enabled: Invalid value: "Topology": Topology needs Gang`)
}
