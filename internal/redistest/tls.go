package redistest

import (
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
	"time"
)

// certs are a certificate authority made for one server, and the serving
// certificate it signed for 127.0.0.1, as PEM files.
type certs struct {
	caFile, certFile, keyFile string
	pool                      *x509.CertPool
}

// writeCerts generates a CA and a serving certificate for 127.0.0.1, valid
// for a day, and writes them into dir.
func writeCerts(dir string) (*certs, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create the CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the serving key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &certs{
		caFile:   filepath.Join(dir, "ca.pem"),
		certFile: filepath.Join(dir, "tls.crt"),
		keyFile:  filepath.Join(dir, "tls.key"),
		pool:     x509.NewCertPool(),
	}
	c.pool.AddCert(caCert)
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{c.caFile, "CERTIFICATE", caDER}, {c.certFile, "CERTIFICATE", der}, {c.keyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// TLSConfig returns a client configuration that trusts the server's CA
// (and only it); nil for a server without TLS.
func (r *Redis) TLSConfig() *tls.Config {
	if r.CAPool == nil {
		return nil
	}
	return &tls.Config{RootCAs: r.CAPool, MinVersion: tls.VersionTLS12}
}
