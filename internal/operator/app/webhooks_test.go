package app

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ai-dynamo/grove/internal/operator/cert"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.ErrorLevel)))
	os.Exit(cluster.RunShared(m, cluster.Options{WithoutControllerManager: true}))
}

// operatorUnderTest is grove-operator's manager with setupWebhooks, run in-process against
// the shared apiserver, whose webhook configurations point at it.
type operatorUnderTest struct {
	cfg         *configv1alpha1.OperatorConfiguration
	client      client.Client
	webhookAddr string
	healthAddr  string
	namespace   string
}

func testConfig(t *testing.T, mode configv1alpha1.CertProvisionMode, namespace string) *configv1alpha1.OperatorConfiguration {
	t.Helper()
	webhookPort, err := cluster.FreePort()
	require.NoError(t, err)
	healthPort, err := cluster.FreePort()
	require.NoError(t, err)
	cfg, err := configv1alpha1.Decode([]byte("apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"))
	require.NoError(t, err)
	wh := &cfg.Server.Webhooks
	wh.BindAddress, wh.Port, wh.ServerCertDir, wh.CertProvisionMode = "127.0.0.1", webhookPort, t.TempDir(), mode
	wh.Namespace = namespace
	cfg.Server.HealthProbes = configv1alpha1.Server{BindAddress: "127.0.0.1", Port: healthPort}
	cfg.Server.Metrics.Port = 0
	cfg.LeaderElection.Enabled = false
	return cfg
}

// start installs the webhook configurations (with caBundle, or none for the operator to
// inject), runs setupWebhooks and the manager, and waits until the apiserver calls the webhooks.
func start(t *testing.T, cfg *configv1alpha1.OperatorConfiguration, caBundle []byte, certOpts ...func(*cert.Options)) *operatorUnderTest {
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
	require.NoError(t, setupWebhooks(ctx, mgr, cfg, registry, certOpts...))
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

func (o *operatorUnderTest) servedSerial(t *testing.T) string {
	t.Helper()
	c, err := webhooktest.ServedCertificate(o.webhookAddr)
	require.NoError(t, err)
	return c.SerialNumber.String()
}

// waitForNewServedCertificate waits until the webhook server presents a certificate other
// than the one with serial old.
func (o *operatorUnderTest) waitForNewServedCertificate(t *testing.T, old string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := webhooktest.ServedCertificate(o.webhookAddr)
		return err == nil && c.SerialNumber.String() != old, nil
	})
	require.NoError(t, err, "the webhook server kept presenting certificate %s", old)
}

func (o *operatorUnderTest) requireAdmits(t *testing.T, name string) {
	t.Helper()
	pcs := webhooktest.ProbePodCliqueSet(o.namespace)
	pcs.Name = name
	require.NoError(t, o.client.Create(context.Background(), pcs))
	require.NotNil(t, pcs.Spec.Template.TerminationDelay, "defaulted by the webhook")
}

func TestAutoModeProvisionsInjectsAndRotatesCertificates(t *testing.T) {
	ns := cluster.Shared.TestNamespace(t)
	cfg := testConfig(t, configv1alpha1.CertProvisionModeAuto, ns)
	cfg.TopologyAwareScheduling.Enabled = false
	// Every serving certificate is "about to expire" three seconds after it is issued, and
	// the operator checks twice a second: it keeps rotating while the test runs.
	o := start(t, cfg, nil, func(opts *cert.Options) {
		opts.CertValidity, opts.RotationLookahead, opts.CheckInterval = time.Hour, time.Hour-3*time.Second, 500*time.Millisecond
	})
	ctx := context.Background()

	secret := &corev1.Secret{}
	require.NoError(t, o.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cfg.Server.Webhooks.SecretName}, secret))
	served := parsePEMCert(t, secret.Data[common.WebhookSecretKeyCert])
	assert.Contains(t, served.DNSNames, "grove-operator."+ns+".svc")
	require.Len(t, served.IPAddresses, 1)
	assert.True(t, served.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)), "the bind address is in the certificate")

	// Readiness reflects the running webhook server.
	resp, err := http.Get("http://" + o.healthAddr + "/readyz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// topologyAwareScheduling is disabled in this configuration: constraints are rejected.
	pcs := webhooktest.ProbePodCliqueSet(o.namespace)
	pcs.Name = "with-topology"
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "gpu", PackDomain: "rack"}
	err = o.client.Create(ctx, pcs)
	require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	assert.Contains(t, err.Error(), "spec.template.topologyConstraint: Forbidden: topology constraints need topologyAwareScheduling.enabled")

	// A rotation: the server switches to a new certificate and the apiserver still trusts it.
	for i := range 2 {
		o.waitForNewServedCertificate(t, o.servedSerial(t))
		o.requireAdmits(t, fmt.Sprintf("after-rotation-%d", i))
	}
}

func TestManualModeServesTheMountedCertificates(t *testing.T) {
	ns := cluster.Shared.TestNamespace(t)
	cfg := testConfig(t, configv1alpha1.CertProvisionModeManual, ns)
	dir := cfg.Server.Webhooks.ServerCertDir
	ca, err := webhooktest.NewCA()
	require.NoError(t, err)
	mounted, err := ca.WriteServingCert(dir, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)

	o := start(t, cfg, ca.PEM)
	assert.Equal(t, mounted.SerialNumber.String(), o.servedSerial(t), "the server presents the mounted certificate")
	o.requireAdmits(t, "manual")

	// The issuer renews the mounted certificate; the server picks it up without a restart.
	renewed, err := ca.WriteServingCert(dir, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	o.waitForNewServedCertificate(t, mounted.SerialNumber.String())
	assert.Equal(t, renewed.SerialNumber.String(), o.servedSerial(t))
	o.requireAdmits(t, "manual-renewed")

	err = o.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cfg.Server.Webhooks.SecretName}, &corev1.Secret{})
	assert.True(t, apierrors.IsNotFound(err), "manual mode creates no Secret: %v", err)
}

func TestManualModeWithoutMountedCertificatesFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	cfg := testConfig(t, configv1alpha1.CertProvisionModeManual, "unused")
	scheme, err := Scheme()
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cluster.Shared.Config, ManagerOptions(cfg, scheme))
	require.NoError(t, err)
	registry, err := newBackendRegistry(cfg)
	require.NoError(t, err)
	err = setupWebhooks(context.Background(), mgr, cfg, registry)
	require.ErrorContains(t, err, filepath.Join(cfg.Server.Webhooks.ServerCertDir, "tls.crt"))
	require.ErrorContains(t, err, "certProvisionMode manual")
}

func parsePEMCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	c, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return c
}
