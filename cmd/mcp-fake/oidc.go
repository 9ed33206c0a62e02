package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// oidcFlags make a protected server of a real provider's: its PRM names
// the provider as authorization server, and it accepts the access tokens
// the provider signed (JWTs, as Dex's are), checked with go-oidc against
// the provider's keys, as a resource server in the field would. This is
// what musterd's login through /oauth/proxy is tested against end to end.
type oidcFlags struct {
	issuer   string
	audience string
	caFile   string
	scopes   string
}

var oidcGuard oidcFlags

func (f *oidcFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.issuer, "authorization-server", "", "with -http: name this issuer in the RFC 9728 metadata and accept only access tokens it signed (go-oidc); GET /refusals counts the 401s")
	fs.StringVar(&f.audience, "audience", "", "with -authorization-server: the aud the tokens must carry (a client id); default: any")
	fs.StringVar(&f.caFile, "ca-file", "", "with -authorization-server: PEM CAs to trust for the issuer besides the system's")
	fs.StringVar(&f.scopes, "scopes", "openid", "with -authorization-server: space-separated scopes_supported of the metadata")
}

// guard returns the protection of the MCP endpoints at base, serving the
// metadata on mux.
func (f *oidcFlags) guard(mux *http.ServeMux, base string) (func(http.Handler) http.Handler, error) {
	hc := &http.Client{}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("-ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-ca-file %s: no PEM certificate in it", f.caFile)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	ctx := oidc.ClientContext(context.Background(), hc)
	provider, err := oidc.NewProvider(ctx, f.issuer)
	if err != nil {
		return nil, fmt.Errorf("-authorization-server %s: %w", f.issuer, err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: f.audience, SkipClientIDCheck: f.audience == ""})

	metadataURL := base + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{f.issuer},
		ScopesSupported: strings.Fields(f.scopes), BearerMethodsSupported: []string{"header"},
	}))
	verify := func(ctx context.Context, raw string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := verifier.Verify(ctx, raw)
		if err != nil {
			return nil, errors.Join(auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: tok.Subject, Expiration: tok.Expiry}, nil
	}
	return guardCounting(mux, verify, metadataURL), nil
}
