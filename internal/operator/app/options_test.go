package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShippedOperatorConfigIsValid(t *testing.T) {
	o := &Options{ConfigFile: filepath.Join("..", "..", "..", "config", "operator", "operator-config.yaml")}
	cfg, err := o.LoadConfig()
	require.NoError(t, err)
	assert.True(t, cfg.TopologyAwareScheduling.Enabled)
	assert.EqualValues(t, "grove-scheduler", cfg.Scheduler.DefaultProfileName)
}

func TestLoadConfigFailsFastWithFieldPaths(t *testing.T) {
	_, err := (&Options{}).LoadConfig()
	require.ErrorContains(t, err, "--config is required")

	f := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(f, []byte("apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\nserver: {webhooks: {port: 99999}}\n"), 0o600))
	_, err = (&Options{ConfigFile: f}).LoadConfig()
	require.ErrorContains(t, err, "server.webhooks.port")

	_, err = (&Options{ConfigFile: filepath.Join(t.TempDir(), "missing.yaml")}).LoadConfig()
	require.ErrorContains(t, err, "reading operator configuration")
}
