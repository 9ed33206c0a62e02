package redistest

import (
	"crypto/tls"
)

// TLSConfig returns a client configuration that trusts the server's CA
// (and only it); nil for a server without TLS.
func (r *Redis) TLSConfig() *tls.Config {
	if r.CAPool == nil {
		return nil
	}
	return &tls.Config{RootCAs: r.CAPool, MinVersion: tls.VersionTLS12}
}
