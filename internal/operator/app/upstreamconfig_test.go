package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	configvalidation "github.com/ai-dynamo/grove/pkg/api/config/validation"
)

// TestUpstreamConfigurationStartsTheOperator loads an OperatorConfiguration in upstream Grove's
// chart shape (its own test data), changes only what ties it to a cluster (ports, the mounted
// certificate's directory, leader election), and runs the operator's manager from it: the
// webhooks admit, debugging.enableProfiling serves pprof, and the upstream-only keys are
// named in a warning.
func TestUpstreamConfigurationStartsTheOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	opts := Options{ConfigFile: filepath.Join(root, "pkg", "api", "config", "validation", "testdata", "upstream-operator-config.yaml")}
	cfg, err := opts.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, configv1alpha1.CertProvisionModeManual, cfg.Server.Webhooks.CertProvisionMode)

	ns := cluster.Shared.TestNamespace(t)
	local := testConfig(t, configv1alpha1.CertProvisionModeManual, ns)
	cfg.Server, cfg.LeaderElection.Enabled = local.Server, false
	pprofPort, err := cluster.FreePort()
	require.NoError(t, err)
	pprofAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pprofPort))
	cfg.Debugging.PprofBindPort = ptr.To(pprofPort) // upstream's keys: pprofBindHost and pprofBindPort
	require.Empty(t, configvalidation.ValidateOperatorConfiguration(cfg))
	ca, err := webhooktest.NewCA()
	require.NoError(t, err)
	_, err = ca.WriteServingCert(cfg.Server.Webhooks.ServerCertDir, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)

	var logged strings.Builder
	warnNotImplemented(funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{}), cfg)
	assert.Contains(t, logged.String(), `"keys"=["authorizer.enabled" "network.autoMNNVLEnabled"]`)

	o := startWithControllers(t, cfg, ca.PEM)
	// Upstream's configuration names kai-scheduler the default with defaultQueue dynamo: a
	// PodCliqueSet without a queue is admitted into that queue.
	o.requireAdmits(t, "upstream-config")

	var body string
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/")
		if err != nil {
			return false, nil
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && resp.StatusCode == http.StatusOK, nil
	}), "pprof is not served on %s", pprofAddr)
	assert.Contains(t, body, "goroutine")
}

func TestProfilingIsOffUnlessEnabled(t *testing.T) {
	cases := []struct {
		d    *configv1alpha1.DebuggingConfiguration
		want string
	}{
		{nil, ""},
		{&configv1alpha1.DebuggingConfiguration{PprofBindAddress: ptr.To("127.0.0.1:1")}, ""},
		{&configv1alpha1.DebuggingConfiguration{EnableProfiling: ptr.To(false), PprofBindAddress: ptr.To("127.0.0.1:1")}, ""},
		{&configv1alpha1.DebuggingConfiguration{EnableProfiling: ptr.To(true)}, "127.0.0.1:2753"},
		{&configv1alpha1.DebuggingConfiguration{EnableProfiling: ptr.To(true), PprofBindHost: ptr.To("::1"), PprofBindPort: ptr.To(6061)}, "[::1]:6061"},
		{&configv1alpha1.DebuggingConfiguration{EnableProfiling: ptr.To(true), PprofBindAddress: ptr.To(":6060")}, ":6060"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, configv1alpha1.PprofAddress(tc.d))
	}
}

// startWithControllers is start with the controllers set up first, as Run does: they
// initialise the backends (here kai-scheduler's defaultQueue) that admission asks.
func startWithControllers(t *testing.T, cfg *configv1alpha1.OperatorConfiguration, caBundle []byte) *operatorUnderTest {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	scheme, err := Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	webhookAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Server.Webhooks.Port))
	require.NoError(t, webhooktest.Install(ctx, c, "https://"+webhookAddr, caBundle))
	mgr, err := ctrl.NewManager(cluster.Shared.Config, ManagerOptions(cfg, scheme))
	require.NoError(t, err)
	registry, err := newBackendRegistry(cfg)
	require.NoError(t, err)
	require.NoError(t, setupControllers(ctx, mgr, cfg, registry))
	require.NoError(t, setupWebhooks(ctx, mgr, cfg, registry))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		assert.NoError(t, webhooktest.Uninstall(context.Background(), c))
	})
	ns := cluster.Shared.TestNamespace(t)
	require.NoError(t, webhooktest.WaitUntilServing(ctx, c, ns))
	return &operatorUnderTest{cfg: cfg, client: c, webhookAddr: webhookAddr, namespace: ns,
		healthAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Server.HealthProbes.Port))}
}
