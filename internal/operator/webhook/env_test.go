package webhook_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ai-dynamo/grove/internal/operator/webhook"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Fuzzing (go test -fuzz) needs no control plane, and every fuzz worker runs TestMain.
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	os.Exit(cluster.RunShared(m, cluster.Options{WithoutControllerManager: true}))
}

// testEnv is grove-operator's webhook server, run in-process with topology-aware scheduling
// enabled and the stand-in backends, registered with the shared apiserver.
type testEnv struct {
	client   client.Client
	warnings *webhooktest.WarningRecorder
}

var (
	envOnce sync.Once
	env     *testEnv
	envErr  error
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := corev1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func sharedEnv(t *testing.T) *testEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	envOnce.Do(func() { env, envErr = startEnv() })
	require.NoError(t, envErr)
	return env
}

// startEnv runs for the whole package: the manager stops when the test binary exits.
func startEnv() (*testEnv, error) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.ErrorLevel)))
	ctx := context.Background()
	scheme := newScheme()
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "grove-webhook-certs-")
	if err != nil {
		return nil, err
	}
	ca, err := webhooktest.NewCA()
	if err != nil {
		return nil, err
	}
	if _, err := ca.WriteServingCert(certDir, net.IPv4(127, 0, 0, 1)); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cluster.Shared.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		return nil, err
	}
	registry, err := webhooktest.Registry(ctx, mgr.GetClient())
	if err != nil {
		return nil, err
	}
	if err := webhook.Register(mgr, webhook.Options{TopologyAwareScheduling: true, Backends: registry, Reader: mgr.GetAPIReader(), Client: mgr.GetClient()}); err != nil {
		return nil, err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "webhook manager stopped: %v\n", err)
		}
	}()

	warnings := &webhooktest.WarningRecorder{}
	cfg := rest.CopyConfig(cluster.Shared.Config)
	cfg.WarningHandler = warnings
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := webhooktest.Install(ctx, c, "https://127.0.0.1:"+strconv.Itoa(port), ca.PEM); err != nil {
		return nil, err
	}
	probeNS := "webhook-probe"
	if err := cluster.Shared.CreateNamespace(ctx, probeNS); err != nil {
		return nil, err
	}
	if err := webhooktest.WaitUntilServing(ctx, c, probeNS); err != nil {
		return nil, err
	}
	return &testEnv{client: c, warnings: warnings}, nil
}

// newPCS is a PodCliqueSet that is valid after defaulting: a standalone clique "router" and
// a scaling group "workers" of "prefill" and "decode", one pod each. MinAvailable of the
// cliques is left for the defaulting webhook.
func newPCS(namespace, name string) *corev1alpha1.PodCliqueSet {
	clique := func(n string) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: n, Spec: corev1alpha1.PodCliqueSpec{
			RoleName: n, Replicas: 1,
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}
	}
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{
			Replicas: 1,
			Template: corev1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("router"), clique("prefill"), clique("decode")},
				PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{
					{Name: "workers", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](2)},
				},
			},
		},
	}
}

// requireInvalid asserts a 422 from the webhook or the schema that names each field path.
func requireInvalid(t *testing.T, err error, paths ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	var fields []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			fields = append(fields, c.Field)
		}
	}
	for _, p := range paths {
		assert.Contains(t, fields, p, "error: %v", err)
	}
}
