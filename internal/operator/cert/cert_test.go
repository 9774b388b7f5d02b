package cert

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, cluster.Options{WithoutControllerManager: true, SkipGroveCRDs: true}))
}

type fixture struct {
	client client.Client
	ns     string
	opts   Options
}

// newFixture gives each test a namespace for its Secret and its own pair of webhook
// configurations (named after the namespace) for the CA bundle.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ns := cluster.Shared.TestNamespace(t)
	f := &fixture{client: c, ns: ns, opts: Options{
		CertDir: t.TempDir(), SecretName: "webhook-certs", Namespace: ns, ServiceName: "grove-operator",
		MutatingWebhookConfigurations: []string{ns + "-m"}, ValidatingWebhookConfigurations: []string{ns + "-v"},
	}}
	f.installConfigurations(t)
	return f
}

func (f *fixture) installConfigurations(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	none := admissionregistrationv1.SideEffectClassNone
	cc := func() admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/never-called")}
	}
	// The rules match nothing real, so these configurations never intercept other requests.
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.opts.MutatingWebhookConfigurations[0]},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "a.example.com", ClientConfig: cc(), Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			{Name: "b.example.com", ClientConfig: cc(), Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.opts.ValidatingWebhookConfigurations[0]},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "c.example.com", ClientConfig: cc(), Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		}}
	require.NoError(t, f.client.Create(ctx, m))
	require.NoError(t, f.client.Create(ctx, v))
	t.Cleanup(func() {
		_ = f.client.Delete(context.Background(), m)
		_ = f.client.Delete(context.Background(), v)
	})
}

func (f *fixture) provisioner(t *testing.T, mutate ...func(*Options)) *Provisioner {
	t.Helper()
	opts := f.opts
	for _, m := range mutate {
		m(&opts)
	}
	p, err := NewProvisioner(f.client, opts, logr.Discard())
	require.NoError(t, err)
	return p
}

func (f *fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, f.client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: f.opts.SecretName}, s))
	return s
}

// injectedBundles returns the caBundle of every webhook of the fixture's configurations.
func (f *fixture) injectedBundles(t *testing.T) [][]byte {
	t.Helper()
	ctx := context.Background()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, f.client.Get(ctx, client.ObjectKey{Name: f.opts.MutatingWebhookConfigurations[0]}, m))
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, f.client.Get(ctx, client.ObjectKey{Name: f.opts.ValidatingWebhookConfigurations[0]}, v))
	var bundles [][]byte
	for _, w := range m.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	return bundles
}

func servingCert(t *testing.T, data map[string][]byte) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(data[common.WebhookSecretKeyCert])
	require.NoError(t, err)
	return certs[0]
}

// requireConsistent checks that the Secret's serving certificate chains to its bundle, covers
// the Service, and is what the files and every webhook configuration carry.
func (f *fixture) requireConsistent(t *testing.T) *corev1.Secret {
	t.Helper()
	s := f.secret(t)
	bundle := s.Data[common.WebhookSecretKeyCABundle]
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(bundle))
	leaf := servingCert(t, s.Data)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "grove-operator." + f.ns + ".svc"})
	require.NoError(t, err, "the serving certificate chains to the bundle and covers the Service")
	for _, name := range []string{common.WebhookSecretKeyCert, common.WebhookSecretKeyKey} {
		onDisk, err := os.ReadFile(filepath.Join(f.opts.CertDir, name))
		require.NoError(t, err)
		assert.Equal(t, s.Data[name], onDisk, name)
	}
	for _, b := range f.injectedBundles(t) {
		assert.Equal(t, bundle, b)
	}
	return s
}

func TestSyncCreatesCertificatesAndReusesThemAfterARestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	require.NoError(t, f.provisioner(t).Sync(ctx))
	first := f.requireConsistent(t)
	assert.Equal(t, corev1.SecretTypeTLS, first.Type)
	assert.Equal(t, common.LabelManagedByValue, first.Labels[common.LabelManagedByKey])
	leaf := servingCert(t, first.Data)
	assert.ElementsMatch(t, []string{"grove-operator." + f.ns + ".svc", "grove-operator." + f.ns + ".svc.cluster.local",
		"grove-operator." + f.ns, "grove-operator"}, leaf.DNSNames)
	assert.InDelta(t, DefaultCertValidity.Hours(), time.Until(leaf.NotAfter).Hours(), 1)

	// A restarted operator (a new Provisioner) keeps the valid certificates.
	require.NoError(t, os.RemoveAll(f.opts.CertDir))
	require.NoError(t, f.provisioner(t).Sync(ctx))
	again := f.requireConsistent(t)
	assert.Equal(t, first.ResourceVersion, again.ResourceVersion, "the Secret was not rewritten")
}

func TestSyncRotatesTheServingCertificateWithinTheLookahead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	require.NoError(t, f.provisioner(t, func(o *Options) { o.CertValidity, o.RotationLookahead = time.Hour, 30*time.Minute }).Sync(ctx))
	before := f.requireConsistent(t)

	// Later, the certificate's hour left is inside a two-hour lookahead.
	require.NoError(t, f.provisioner(t, func(o *Options) { o.RotationLookahead = 2 * time.Hour }).Sync(ctx))
	after := f.requireConsistent(t)
	assert.NotEqual(t, servingCert(t, before.Data).SerialNumber, servingCert(t, after.Data).SerialNumber)
	assert.Equal(t, before.Data[common.WebhookSecretKeyCABundle], after.Data[common.WebhookSecretKeyCABundle], "the CA is kept")
	assert.Equal(t, before.Data[common.WebhookSecretKeyCAKey], after.Data[common.WebhookSecretKeyCAKey])
}

func TestSyncRotatesTheCAAndKeepsTrustingTheOldOne(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	require.NoError(t, f.provisioner(t, func(o *Options) {
		o.CAValidity, o.CertValidity, o.RotationLookahead = 2*time.Hour, time.Hour, 30*time.Minute
	}).Sync(ctx))
	before := f.requireConsistent(t)
	oldCA, err := certutil.ParseCertsPEM(before.Data[common.WebhookSecretKeyCABundle])
	require.NoError(t, err)
	require.Len(t, oldCA, 1)

	require.NoError(t, f.provisioner(t, func(o *Options) { o.RotationLookahead = 3 * time.Hour }).Sync(ctx))
	after := f.requireConsistent(t)
	bundle, err := certutil.ParseCertsPEM(after.Data[common.WebhookSecretKeyCABundle])
	require.NoError(t, err)
	require.Len(t, bundle, 2, "new CA first, then the old one until it expires")
	assert.False(t, bundle[0].Equal(oldCA[0]))
	assert.True(t, bundle[1].Equal(oldCA[0]))
	assert.NoError(t, servingCert(t, after.Data).CheckSignatureFrom(bundle[0]), "the new serving certificate is signed by the new CA")
}

func TestSyncReplacesADamagedSecret(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	require.NoError(t, f.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.opts.SecretName},
		Data:       map[string][]byte{common.WebhookSecretKeyCABundle: []byte("garbage"), common.WebhookSecretKeyCert: []byte("garbage")},
	}))
	require.NoError(t, f.provisioner(t).Sync(ctx))
	f.requireConsistent(t)
}

func TestConcurrentReplicasAgreeOnOneCertificate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var wg sync.WaitGroup
	errs := make([]error, len(dirs))
	for i, dir := range dirs {
		p := f.provisioner(t, func(o *Options) { o.CertDir = dir })
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Sync(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	s := f.secret(t)
	for _, dir := range dirs {
		onDisk, err := os.ReadFile(filepath.Join(dir, common.WebhookSecretKeyCert))
		require.NoError(t, err)
		assert.Equal(t, s.Data[common.WebhookSecretKeyCert], onDisk, "every replica serves the stored certificate")
	}
}

func TestStartRepairsTheCABundlePeriodically(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := f.provisioner(t, func(o *Options) { o.CheckInterval = 100 * time.Millisecond })
	require.NoError(t, p.Sync(ctx))
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()

	// Someone re-applies the manifests without a caBundle.
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, f.client.Get(ctx, client.ObjectKey{Name: f.opts.ValidatingWebhookConfigurations[0]}, v))
	v.Webhooks[0].ClientConfig.CABundle = nil
	require.NoError(t, f.client.Update(ctx, v))

	want := f.secret(t).Data[common.WebhookSecretKeyCABundle]
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, b := range f.injectedBundles(t) {
			if string(b) != string(want) {
				return false, nil
			}
		}
		return true, nil
	}))
	cancel()
	require.NoError(t, <-done)
}

func TestSyncToleratesMissingWebhookConfigurations(t *testing.T) {
	f := newFixture(t)
	p := f.provisioner(t, func(o *Options) {
		o.MutatingWebhookConfigurations = []string{"not-installed"}
		o.ValidatingWebhookConfigurations = []string{"not-installed-either"}
	})
	require.NoError(t, p.Sync(context.Background()))
	_, err := os.Stat(filepath.Join(f.opts.CertDir, common.WebhookSecretKeyCert))
	assert.NoError(t, err, "the server still gets its certificate")
}

func TestNewProvisionerRejectsALookaheadLongerThanTheValidity(t *testing.T) {
	_, err := NewProvisioner(nil, Options{CertDir: "d", SecretName: "s", Namespace: "n", ServiceName: "svc",
		CertValidity: time.Hour, RotationLookahead: 2 * time.Hour}, logr.Discard())
	require.ErrorContains(t, err, "rotation lookahead")
}

func TestCheckMounted(t *testing.T) {
	dir := t.TempDir()
	err := CheckMounted(dir)
	require.ErrorContains(t, err, filepath.Join(dir, "tls.crt"))

	ca, err := NewCA("test", time.Hour)
	require.NoError(t, err)
	kp, err := ca.Issue([]string{"svc.ns.svc"}, nil, time.Hour)
	require.NoError(t, err)
	key, err := kp.KeyPEM()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), kp.CertPEM(), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600))
	require.NoError(t, CheckMounted(dir))
}
