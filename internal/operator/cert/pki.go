package cert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Certificates are backdated a little so a clock that lags the issuer's still accepts them.
const backdate = 5 * time.Minute

// KeyPair is a certificate with its private key. The operator's webhook CA and serving
// certificates are KeyPairs, and so are the certificates tests issue as an external issuer
// (cert-manager) would, so there is one way to mint them.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewCA creates a self-signed CA valid from now for validity. (client-go's
// NewSelfSignedCACert always issues for ten years; rotation needs the validity configurable.)
func NewCA(commonName string, validity time.Duration) (*KeyPair, error) {
	return newCA(commonName, time.Now(), validity)
}

// Issue creates a serving certificate signed by ca for dnsNames and ips, valid from now for
// validity but never beyond the CA.
func (ca *KeyPair) Issue(dnsNames []string, ips []net.IP, validity time.Duration) (*KeyPair, error) {
	return newServingCert(ca, dnsNames, ips, time.Now(), validity)
}

// CertPEM is the certificate in PEM.
func (kp *KeyPair) CertPEM() []byte {
	// Encoding into memory cannot fail.
	b, _ := certutil.EncodeCertificates(kp.Cert)
	return b
}

// KeyPEM is the private key in PEM.
func (kp *KeyPair) KeyPEM() ([]byte, error) { return keyutil.MarshalPrivateKeyToPEM(kp.Key) }

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newCA(commonName string, now time.Time, validity time.Duration) (*KeyPair, error) {
	return sign(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
}

func newServingCert(ca *KeyPair, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*KeyPair, error) {
	commonName := ""
	switch {
	case len(dnsNames) > 0:
		commonName = dnsNames[0]
	case len(ips) > 0:
		commonName = ips[0].String()
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	return sign(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// sign gives tpl a new key and serial number and signs it with issuer (self-signed when nil).
func sign(issuer *KeyPair, tpl *x509.Certificate) (*KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	if tpl.SerialNumber, err = serialNumber(); err != nil {
		return nil, err
	}
	parent, parentKey := tpl, crypto.Signer(key)
	if issuer != nil {
		parent, parentKey = issuer.Cert, issuer.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// parseKeyPair parses a certificate (the first of certPEM) with its key and checks they
// match; the other certificates of certPEM are returned as well.
func parseKeyPair(certPEM, keyPEM []byte) (*KeyPair, []*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate: %w", err)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok || !publicKeysEqual(key.Public(), certs[0].PublicKey) {
		return nil, nil, errors.New("the key does not belong to the certificate")
	}
	return &KeyPair{Cert: certs[0], Key: key}, certs[1:], nil
}

// checkCA tells why a CA cannot be kept: not a CA, or expiring within lookahead.
func checkCA(ca *KeyPair, now time.Time, lookahead time.Duration) error {
	if !ca.Cert.IsCA {
		return errors.New("not a CA certificate")
	}
	if ca.Cert.NotAfter.Sub(now) < lookahead {
		return fmt.Errorf("CA expires at %s", ca.Cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// checkServingCert tells why a serving certificate cannot be kept: not signed by ca, missing
// a name, or expiring within lookahead.
func checkServingCert(kp *KeyPair, ca *KeyPair, dnsNames []string, ips []net.IP, now time.Time, lookahead time.Duration) error {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := kp.Cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("not valid for the current CA: %w", err)
	}
	for _, n := range dnsNames {
		if !slices.Contains(kp.Cert.DNSNames, n) {
			return fmt.Errorf("does not cover %s", n)
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(kp.Cert.IPAddresses, ip.Equal) {
			return fmt.Errorf("does not cover %s", ip)
		}
	}
	if kp.Cert.NotAfter.Sub(now) < lookahead {
		return fmt.Errorf("expires at %s", kp.Cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// caBundle is the PEM bundle the apiserver trusts: the signing CA first, then previous CAs
// that have not expired yet (serving certificates they signed may still be in use).
func caBundle(ca *x509.Certificate, previous []*x509.Certificate, now time.Time) []byte {
	certs := []*x509.Certificate{ca}
	for _, p := range previous {
		if p.NotAfter.After(now) && !p.Equal(ca) {
			certs = append(certs, p)
		}
	}
	// Encoding into memory cannot fail.
	b, _ := certutil.EncodeCertificates(certs...)
	return b
}
