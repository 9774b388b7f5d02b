// Package cert provides the webhook server's TLS certificate. In certProvisionMode auto the
// operator is its own CA: Provisioner keeps a CA and a serving certificate in a Secret,
// writes the serving pair into the server's certificate directory, injects the CA bundle into
// the operator's webhook configurations and rotates both before they expire. In manual mode
// the pair is mounted (e.g. by cert-manager) and CheckMounted only verifies it is there;
// controller-runtime's certwatcher reloads either from disk when it changes. PEM encoding and
// parsing are client-go's (util/cert, util/keyutil).
//
// Why not github.com/open-policy-agent/cert-controller (v0.16), which upstream Grove,
// Gatekeeper and Kueue use: its rotator cannot keep behaviour this package is tested for.
//   - On a CA rotation it injects the new CA alone. Replicas still serving a certificate of
//     the old CA (until they read the new files) are then rejected by the apiserver; here
//     the old CA stays in the bundle until it expires.
//   - It never writes the certificate directory: it relies on the kubelet projecting the
//     Secret into the pod, so an operator run outside a pod (local control planes, the e2e
//     suites) never gets a certificate; here every replica writes the stored pair itself.
//   - It needs the Secret to exist already (shipped empty by a chart); here a missing Secret
//     is created, with AlreadyExists deciding between racing replicas.
//   - Its serving certificate carries DNS names only; an apiserver that calls the operator
//     by address (a local control plane) needs the bind address in the certificate.
//   - It issues fixed serial numbers (0 for the CA, 1 for every serving certificate) and
//     reads back only RSA keys in PKCS#1.
//
// What is left is small: a create-or-rotate of one Secret with optimistic concurrency, the
// bundle injection, and an atomic file write.
package cert

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// Defaults of Options.
const (
	DefaultCAValidity        = 10 * 365 * 24 * time.Hour
	DefaultCertValidity      = 365 * 24 * time.Hour
	DefaultRotationLookahead = 90 * 24 * time.Hour
	DefaultCheckInterval     = time.Hour
)

// Options configures a Provisioner.
type Options struct {
	// CertDir receives tls.crt and tls.key for the webhook server.
	CertDir string
	// SecretName and Namespace locate the Secret that holds the CA and serving certificate;
	// Namespace is also the namespace of the Service.
	SecretName, Namespace string
	// ServiceName is the Service in front of the webhook server; the certificate is issued for
	// <ServiceName>.<Namespace>.svc (and its shorter and longer forms).
	ServiceName string
	// IPAddresses are added to the certificate, for an apiserver that calls the webhook server
	// by address rather than through the Service (an operator run outside the cluster).
	IPAddresses []net.IP
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations receive the CA bundle.
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations []string
	// CAValidity and CertValidity are the lifetimes of new certificates; RotationLookahead is how
	// long before expiry they are replaced; CheckInterval is how often Start checks. Zero means
	// the default.
	CAValidity, CertValidity, RotationLookahead, CheckInterval time.Duration
}

// DNSNames are the names the serving certificate covers.
func (o Options) DNSNames() []string {
	svc := o.ServiceName + "." + o.Namespace
	return []string{svc + ".svc", svc + ".svc.cluster.local", svc, o.ServiceName}
}

func (o *Options) setDefaults() {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&o.CAValidity, DefaultCAValidity}, {&o.CertValidity, DefaultCertValidity}, {&o.RotationLookahead, DefaultRotationLookahead}, {&o.CheckInterval, DefaultCheckInterval}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
}

// Provisioner keeps the webhook certificates current. Every operator replica runs one: the
// Secret is the single source of truth, so all replicas serve the same certificate, and
// optimistic concurrency lets exactly one of them write a rotation.
type Provisioner struct {
	client client.Client
	opts   Options
	log    logr.Logger
}

// NewProvisioner returns a Provisioner. c should not be a cached client: the operator has no
// reason to cache Secrets or webhook configurations cluster-wide.
func NewProvisioner(c client.Client, opts Options, log logr.Logger) (*Provisioner, error) {
	opts.setDefaults()
	if opts.CertDir == "" || opts.SecretName == "" || opts.Namespace == "" || opts.ServiceName == "" {
		return nil, errors.New("certificate provisioning needs a certificate directory, a Secret, a namespace and a Service name")
	}
	if opts.RotationLookahead >= opts.CertValidity || opts.RotationLookahead >= opts.CAValidity {
		return nil, fmt.Errorf("rotation lookahead %s must be shorter than the certificate validities", opts.RotationLookahead)
	}
	return &Provisioner{client: c, opts: opts, log: log}, nil
}

// Sync makes the Secret hold a CA and a serving certificate that are valid beyond the rotation
// lookahead (reusing what is there when it is), injects the CA bundle into the webhook
// configurations and then writes the serving pair into CertDir. The bundle goes first so the
// apiserver already trusts a new CA when the server starts presenting a certificate it signed.
func (p *Provisioner) Sync(ctx context.Context) error {
	data, err := p.ensureSecret(ctx)
	if err != nil {
		return err
	}
	if err := p.injectCABundle(ctx, data[common.WebhookSecretKeyCABundle]); err != nil {
		return err
	}
	return p.writeFiles(data)
}

// Start runs Sync every CheckInterval until ctx ends (a manager.Runnable). Errors are logged
// and retried at the next check; the certificate in use stays valid for the lookahead.
func (p *Provisioner) Start(ctx context.Context) error {
	t := time.NewTicker(p.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := p.Sync(ctx); err != nil && ctx.Err() == nil {
				p.log.Error(err, "Checking the webhook certificates failed; retrying at the next check", "interval", p.opts.CheckInterval)
			}
		}
	}
}

// NeedLeaderElection is false: every replica serves webhooks and needs the current files.
func (p *Provisioner) NeedLeaderElection() bool { return false }

func (p *Provisioner) ensureSecret(ctx context.Context) (map[string][]byte, error) {
	key := client.ObjectKey{Namespace: p.opts.Namespace, Name: p.opts.SecretName}
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			return nil, fmt.Errorf("secret %s keeps changing while the webhook certificates are written", key)
		}
		secret := &corev1.Secret{}
		err := p.client.Get(ctx, key, secret)
		switch {
		case apierrors.IsNotFound(err):
			data, _, err := p.renew(nil)
			if err != nil {
				return nil, err
			}
			secret = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
					Labels: map[string]string{common.LabelManagedByKey: common.LabelManagedByValue}},
				Type: corev1.SecretTypeTLS,
				Data: data,
			}
			if err := p.client.Create(ctx, secret); apierrors.IsAlreadyExists(err) {
				continue // another replica was first; use its certificates
			} else if err != nil {
				return nil, fmt.Errorf("creating secret %s: %w", key, err)
			}
			p.log.Info("Created the webhook certificates", "secret", key)
			return data, nil
		case err != nil:
			return nil, fmt.Errorf("reading secret %s: %w", key, err)
		}
		data, reason, err := p.renew(secret.Data)
		if err != nil {
			return nil, err
		}
		if reason == "" {
			return secret.Data, nil
		}
		secret.Data = data
		if err := p.client.Update(ctx, secret); apierrors.IsConflict(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("updating secret %s: %w", key, err)
		}
		p.log.Info("Rotated the webhook certificates", "secret", key, "reason", reason)
		return data, nil
	}
}

// renew returns the Secret data to store and why it changed ("" when current is still good).
func (p *Provisioner) renew(current map[string][]byte) (map[string][]byte, string, error) {
	now := time.Now()
	ca, previous, caErr := parseKeyPair(current[common.WebhookSecretKeyCABundle], current[common.WebhookSecretKeyCAKey])
	if caErr == nil {
		caErr = checkCA(ca, now, p.opts.RotationLookahead)
	}
	reason := ""
	if caErr != nil {
		if ca != nil {
			previous = append(previous, ca.Cert)
		}
		var err error
		if ca, err = newCA("grove-operator-webhook-ca", now, p.opts.CAValidity); err != nil {
			return nil, "", fmt.Errorf("creating the webhook CA: %w", err)
		}
		reason = "CA: " + caErr.Error()
	}
	serving, _, servingErr := parseKeyPair(current[common.WebhookSecretKeyCert], current[common.WebhookSecretKeyKey])
	if servingErr == nil {
		servingErr = checkServingCert(serving, ca, p.opts.DNSNames(), p.opts.IPAddresses, now, p.opts.RotationLookahead)
	}
	bundle := caBundle(ca.Cert, previous, now)
	if servingErr == nil && reason == "" {
		if !bytes.Equal(bundle, current[common.WebhookSecretKeyCABundle]) {
			// Only an expired previous CA dropped out of the bundle.
			return p.encode(ca, serving, bundle, "expired CA removed from the bundle")
		}
		return current, "", nil
	}
	if reason == "" {
		reason = "serving certificate: " + servingErr.Error()
	}
	var err error
	if serving, err = newServingCert(ca, p.opts.DNSNames(), p.opts.IPAddresses, now, p.opts.CertValidity); err != nil {
		return nil, "", fmt.Errorf("creating the webhook serving certificate: %w", err)
	}
	return p.encode(ca, serving, bundle, reason)
}

func (p *Provisioner) encode(ca, serving *KeyPair, bundle []byte, reason string) (map[string][]byte, string, error) {
	caKey, err := ca.KeyPEM()
	if err != nil {
		return nil, "", err
	}
	servingKey, err := serving.KeyPEM()
	if err != nil {
		return nil, "", err
	}
	return map[string][]byte{
		common.WebhookSecretKeyCABundle: bundle,
		common.WebhookSecretKeyCAKey:    caKey,
		common.WebhookSecretKeyCert:     serving.CertPEM(),
		common.WebhookSecretKeyKey:      servingKey,
	}, reason, nil
}

// injectCABundle sets the bundle on every webhook of the operator's configurations. A
// configuration that is not installed (yet) is skipped and picked up at the next check.
func (p *Provisioner) injectCABundle(ctx context.Context, bundle []byte) error {
	for _, name := range p.opts.MutatingWebhookConfigurations {
		err := injectInto(ctx, p, "MutatingWebhookConfiguration", name, bundle, func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []*clientConfig {
			return clientConfigs(cfg.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *clientConfig { return &w.ClientConfig })
		})
		if err != nil {
			return err
		}
	}
	for _, name := range p.opts.ValidatingWebhookConfigurations {
		err := injectInto(ctx, p, "ValidatingWebhookConfiguration", name, bundle, func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []*clientConfig {
			return clientConfigs(cfg.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *clientConfig { return &w.ClientConfig })
		})
		if err != nil {
			return err
		}
	}
	return nil
}

type clientConfig = admissionregistrationv1.WebhookClientConfig

// injectInto sets bundle on the client configurations of the webhook configuration kind/name
// and writes it when one changed, re-reading it on a conflict.
func injectInto[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, p *Provisioner, kind, name string, bundle []byte, configsOf func(PT) []*clientConfig) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg := PT(new(T)) // fresh on every attempt: decoding into a used object can keep stale fields
		if err := p.client.Get(ctx, client.ObjectKey{Name: name}, cfg); err != nil {
			return err
		}
		changed := false
		for _, cc := range configsOf(cfg) {
			if !bytes.Equal(cc.CABundle, bundle) {
				cc.CABundle, changed = bundle, true
			}
		}
		if !changed {
			return nil
		}
		return p.client.Update(ctx, cfg)
	})
	switch {
	case apierrors.IsNotFound(err):
		p.log.Info("Webhook configuration not installed; the CA bundle is injected once it is", "kind", kind, "name", name)
		return nil
	case err != nil:
		return fmt.Errorf("injecting the CA bundle into %s %s: %w", kind, name, err)
	}
	return nil
}

// clientConfigs points at the client configuration of each webhook.
func clientConfigs[W any](webhooks []W, of func(*W) *clientConfig) []*clientConfig {
	ccs := make([]*clientConfig, 0, len(webhooks))
	for i := range webhooks {
		ccs = append(ccs, of(&webhooks[i]))
	}
	return ccs
}

// writeFiles writes the serving pair where the webhook server reads it, replacing each file
// atomically and only when its content changed (every write wakes the certwatcher).
func (p *Provisioner) writeFiles(data map[string][]byte) error {
	if err := os.MkdirAll(p.opts.CertDir, 0o700); err != nil {
		return fmt.Errorf("creating the webhook certificate directory: %w", err)
	}
	// The key first: the certwatcher reloads on the certificate's change and then finds a
	// matching key.
	for _, name := range []string{common.WebhookSecretKeyKey, common.WebhookSecretKeyCert, common.WebhookSecretKeyCABundle} {
		path := filepath.Join(p.opts.CertDir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data[name]) {
			continue
		}
		tmp, err := os.CreateTemp(p.opts.CertDir, "."+name+"-")
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		_, werr := tmp.Write(data[name])
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			_ = os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// CheckMounted verifies, for certProvisionMode manual, that dir holds a usable serving pair.
func CheckMounted(dir string) error {
	certFile, keyFile := filepath.Join(dir, common.WebhookSecretKeyCert), filepath.Join(dir, common.WebhookSecretKeyKey)
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return fmt.Errorf("certProvisionMode manual needs %s and %s (e.g. mounted from a cert-manager Secret): %w", certFile, keyFile, err)
	}
	return nil
}
