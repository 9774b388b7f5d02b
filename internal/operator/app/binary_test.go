package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

// TestBinaryFailsFastOnAnInvalidConfig builds the real grove-operator, checks its stamped
// --version, and runs it with bad configurations: it must exit non-zero at once and name
// every bad field.
func TestBinaryFailsFastOnAnInvalidConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the operator binary")
	}
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "grove-operator")
	// Stamped the way the Makefile stamps releases.
	build := exec.Command("go", "build", "-ldflags", "-X github.com/ai-dynamo/grove/pkg/version.gitVersion=v9.8.7-test",
		"-o", bin, "./cmd/grove-operator")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `^grove-operator v9\.8\.7-test \(Kubernetes v1\.37\.\d+, go\S+ \w+/\w+\)\n$`, string(out))
	})

	config := filepath.Join(t.TempDir(), "operator-config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
server:
  webhooks:
    port: 70000
    certProvisionMode: sometimes
scheduler:
  profiles: [{name: grove-scheduler}, {name: my-scheduler}]
  defaultProfileName: grove-scheduler
`), 0o600))

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"invalid fields", []string{"--config", config}, []string{
			"server.webhooks.port: Invalid value: 70000",
			`server.webhooks.certProvisionMode: Unsupported value: "sometimes"`,
			`scheduler.profiles[1].name: Unsupported value: "my-scheduler"`,
		}},
		{"no config", nil, []string{"--config is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			// No kubeconfig is reachable: the operator must fail on its configuration first.
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want a non-zero exit, got %v; stderr: %s", err, stderr.String())
			assert.NotZero(t, exit.ExitCode())
			assert.Less(t, time.Since(start), 10*time.Second, "fails fast")
			for _, w := range tc.want {
				assert.Contains(t, stderr.String(), w)
			}
		})
	}
}
