package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
)

// The transport of musterd's outbound HTTPS (remote MCP servers, and the
// identity providers of OAuth), with the CAs of -extra-ca-file trusted
// beside the system's: muster's --extra-ca-file, for a provider or server
// behind a private CA.

// loadExtraCAs returns the system's roots plus the certificates of the PEM
// file; nil for no file.
func loadExtraCAs(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-extra-ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // none on this system: the file's alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-extra-ca-file %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// outboundTransport is http.DefaultTransport's settings with roots as the
// trusted CAs; http.DefaultTransport itself when roots is nil.
func outboundTransport(roots *x509.CertPool) *http.Transport {
	base := http.DefaultTransport.(*http.Transport)
	if roots == nil {
		return base
	}
	t := base.Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return t
}
