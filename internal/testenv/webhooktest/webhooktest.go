// Package webhooktest supports tests that run grove-operator's webhooks against a real
// apiserver: it installs config/webhook/manifests.yaml pointing at a local webhook server,
// issues certificates for manual mode, and builds the scheduler backends the tests admit
// with. It is imported by tests only.
package webhooktest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
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

	"github.com/ai-dynamo/grove/internal/operator/cert"
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

// CA issues serving certificates as an external issuer (cert-manager) would, with the
// operator's own certificate minting.
type CA struct {
	kp *cert.KeyPair
	// PEM is the CA certificate, the caBundle to register.
	PEM []byte
}

// NewCA creates a CA valid for a day.
func NewCA() (*CA, error) {
	kp, err := cert.NewCA("test-ca", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &CA{kp: kp, PEM: kp.CertPEM()}, nil
}

// WriteServingCert writes a new tls.crt and tls.key for ip (and localhost) into dir and
// returns the certificate.
func (ca *CA) WriteServingCert(dir string, ip net.IP) (*x509.Certificate, error) {
	kp, err := ca.kp.Issue([]string{"localhost"}, []net.IP{ip}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	key, err := kp.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The key first: the server's certwatcher reloads when the certificate changes.
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		return nil, err
	}
	return kp.Cert, os.WriteFile(filepath.Join(dir, "tls.crt"), kp.CertPEM(), 0o600)
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
