// Package webhooktest supports tests that run grove-operator's webhooks against a real
// apiserver: it installs config/webhook/manifests.yaml pointing at a local webhook server,
// issues certificates for manual mode, and builds the scheduler backends the tests admit
// with. It is imported by tests only.
package webhooktest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Manifests decodes config/webhook/manifests.yaml.
func Manifests() ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	root, err := cluster.ModuleRoot()
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(string(doc)) == "---" {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("decoding config/webhook/manifests.yaml: %w", err)
		}
		switch o := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			mutating = append(mutating, o)
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			validating = append(validating, o)
		}
	}
	return mutating, validating, nil
}

// Install creates the configurations of config/webhook/manifests.yaml (replacing any of the
// same name) so that the apiserver calls the webhook server at baseURL
// ("https://127.0.0.1:<port>") on each webhook's path instead of going through the Service.
// caBundle is what the apiserver trusts; nil leaves it for the operator to inject.
func Install(ctx context.Context, c client.Client, baseURL string, caBundle []byte) error {
	mutating, validating, err := Manifests()
	if err != nil {
		return err
	}
	local := func(cc *admissionregistrationv1.WebhookClientConfig) {
		url := baseURL + ptr.Deref(cc.Service.Path, "/")
		cc.URL, cc.Service, cc.CABundle = &url, nil, caBundle
	}
	for _, m := range mutating {
		for i := range m.Webhooks {
			local(&m.Webhooks[i].ClientConfig)
		}
		if err := replace(ctx, c, m); err != nil {
			return err
		}
	}
	for _, v := range validating {
		for i := range v.Webhooks {
			local(&v.Webhooks[i].ClientConfig)
		}
		if err := replace(ctx, c, v); err != nil {
			return err
		}
	}
	return nil
}

// Uninstall deletes the configurations of config/webhook/manifests.yaml.
func Uninstall(ctx context.Context, c client.Client) error {
	mutating, validating, err := Manifests()
	if err != nil {
		return err
	}
	for _, m := range mutating {
		if err := client.IgnoreNotFound(c.Delete(ctx, m)); err != nil {
			return err
		}
	}
	for _, v := range validating {
		if err := client.IgnoreNotFound(c.Delete(ctx, v)); err != nil {
			return err
		}
	}
	return nil
}

func replace(ctx context.Context, c client.Client, obj client.Object) error {
	if err := client.IgnoreNotFound(c.Delete(ctx, obj.DeepCopyObject().(client.Object))); err != nil {
		return err
	}
	return c.Create(ctx, obj)
}

// WaitUntilServing waits until the apiserver calls both the defaulting and the validating
// PodCliqueSet webhook (configuration changes reach the apiserver asynchronously), using
// dry-run creates in namespace.
func WaitUntilServing(ctx context.Context, c client.Client, namespace string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := ProbePodCliqueSet(namespace)
		// Duplicate role names are caught by the validating webhook only.
		probe.Spec.Template.Cliques = append(probe.Spec.Template.Cliques, probe.Spec.Template.Cliques[0].DeepCopy())
		probe.Spec.Template.Cliques[1].Name = "other"
		err := c.Create(ctx, probe, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "pcs.validating.webhooks.grove.io") {
			last = fmt.Errorf("validating webhook not called yet: %v", err)
			return false, nil
		}
		probe = ProbePodCliqueSet(namespace)
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			last = err
			return false, nil
		}
		if probe.Spec.Template.TerminationDelay == nil {
			last = fmt.Errorf("defaulting webhook not called yet")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", err, last)
	}
	return nil
}

// ProbePodCliqueSet is a small valid PodCliqueSet that relies on defaulting.
func ProbePodCliqueSet(namespace string) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "main", Spec: corev1alpha1.PodCliqueSpec{
				RoleName: "main", Replicas: 1,
				PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}}},
		}},
	}
}

// CA issues serving certificates as an external issuer (cert-manager) would.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, the caBundle to register.
	PEM []byte
}

// NewCA creates a CA valid for a day.
func NewCA() (*CA, error) {
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

var serial struct {
	sync.Mutex
	next int64
}

// WriteServingCert writes a new tls.crt and tls.key for ip into dir and returns the
// certificate.
func (ca *CA) WriteServingCert(dir string, ip net.IP) (*x509.Certificate, error) {
	serial.Lock()
	serial.next++
	n := serial.next + 100
	serial.Unlock()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tpl := &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: ip.String()},
		IPAddresses: []net.IP{ip}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return cert, os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

// ServedCertificate returns the leaf certificate the TLS server at addr presents.
func ServedCertificate(addr string) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the presented certificate
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WarningRecorder collects the warnings the apiserver returns (admission webhook warnings).
type WarningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

var _ rest.WarningHandler = &WarningRecorder{}

// HandleWarningHeader records a warning.
func (w *WarningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// Take returns the recorded warnings and forgets them.
func (w *WarningRecorder) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}
