package cert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Certificates are backdated a little so a clock that lags the issuer's still accepts them.
const backdate = 5 * time.Minute

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// newCA creates a self-signed CA valid from now for validity.
func newCA(commonName string, now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

// newServingCert creates a server certificate signed by ca for the given names; it never
// outlives its CA.
func newServingCert(ca *keyPair, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if ek, ecErr := x509.ParseECPrivateKey(block.Bytes); ecErr == nil {
			return ek, nil
		}
		if rk, rsaErr := x509.ParsePKCS1PrivateKey(block.Bytes); rsaErr == nil {
			return rk, nil
		}
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("private key cannot sign")
	}
	return signer, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// parseKeyPair parses a certificate (the first of certPEM) with its key and checks they match.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, []*x509.Certificate, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	if !publicKeysEqual(key.Public(), certs[0].PublicKey) {
		return nil, nil, errors.New("the key does not belong to the certificate")
	}
	return &keyPair{cert: certs[0], key: key}, certs[1:], nil
}

// checkCA tells why a CA cannot be kept: not a CA, or expiring within lookahead.
func checkCA(ca *keyPair, now time.Time, lookahead time.Duration) error {
	if !ca.cert.IsCA {
		return errors.New("not a CA certificate")
	}
	if ca.cert.NotAfter.Sub(now) < lookahead {
		return fmt.Errorf("CA expires at %s", ca.cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// checkServingCert tells why a serving certificate cannot be kept: not signed by ca, missing
// a name, or expiring within lookahead.
func checkServingCert(kp *keyPair, ca *keyPair, dnsNames []string, ips []net.IP, now time.Time, lookahead time.Duration) error {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	if _, err := kp.cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("not valid for the current CA: %w", err)
	}
	for _, n := range dnsNames {
		if !slices.Contains(kp.cert.DNSNames, n) {
			return fmt.Errorf("does not cover %s", n)
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(kp.cert.IPAddresses, ip.Equal) {
			return fmt.Errorf("does not cover %s", ip)
		}
	}
	if kp.cert.NotAfter.Sub(now) < lookahead {
		return fmt.Errorf("expires at %s", kp.cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// caBundle is the PEM bundle the apiserver trusts: the signing CA first, then previous CAs
// that have not expired yet (serving certificates they signed may still be in use).
func caBundle(ca *x509.Certificate, previous []*x509.Certificate, now time.Time) []byte {
	var b bytes.Buffer
	b.Write(encodeCert(ca))
	for _, p := range previous {
		if p.NotAfter.After(now) && !p.Equal(ca) {
			b.Write(encodeCert(p))
		}
	}
	return b.Bytes()
}
