package main

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/identity"
	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
	"github.com/musterd/musterd/pkg/oauth/verify"
)

// Who musterd lets in when config.yaml's aggregator.oauth.server is
// enabled: as muster does, the tokens of its identity provider
// (dex.issuerUrl) issued for musterd (dex.clientId, or one of
// trustedAudiences), and the tokens of each of trustedIssuers on that
// issuer's terms. Every MCP request and every request the static token
// guarded then needs one of them, and the caller is the token's user.
// musterd is no authorization server of its own yet: its protected-
// resource metadata names the provider.

// metadataPath is where musterd's protected-resource metadata (RFC 9728)
// is served, and below it the MCP endpoint's.
const metadataPath = "/.well-known/oauth-protected-resource"

// inbound is the check of callers' tokens, and the metadata that tells a
// client where to get one.
type inbound struct {
	auth     identity.Authenticator
	metadata *oauthex.ProtectedResourceMetadata
}

// newInbound returns nil when aggregator.oauth.server is off: the static
// token's check applies.
func newInbound(srv oauthconfig.Server, outbound *http.Transport, log *slog.Logger) (*inbound, error) {
	if !srv.Enabled {
		return nil, nil
	}
	provider := verify.Issuer{URL: srv.Dex.IssuerURL, Audiences: append([]string{srv.Dex.ClientID}, srv.TrustedAudiences...)}
	issuers := []verify.Issuer{provider}
	for _, ti := range srv.TrustedIssuers {
		if ti.Issuer == provider.URL {
			continue // the provider's own terms hold for its tokens
		}
		types := ti.AcceptedTypHeaders
		if len(types) == 0 {
			types = []string{"at+jwt"} // RFC 9068's, muster's default
		}
		issuers = append(issuers, verify.Issuer{URL: ti.Issuer, JWKSURL: ti.JwksURL, Audiences: ti.AllowedAudiences,
			AcceptedTypes: types, AllowedClaims: ti.AllowedClaims, SubjectClaim: ti.SubjectClaim})
	}
	// The provider's access tokens that are no JWT are its to vouch for,
	// at its userinfo endpoint, as muster accepts them.
	v, err := verify.New(verify.Options{Issuers: issuers, HTTPClient: &http.Client{Transport: outbound, Timeout: 30 * time.Second},
		UserInfoIssuer: provider.URL, Log: log})
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(srv.BaseURL, "/")
	return &inbound{
		auth: v.Authenticator(verify.AuthenticatorOptions{ResourceMetadataURL: base + metadataPath}),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               srv.EffectiveResourceIdentifier(),
			AuthorizationServers:   []string{provider.URL},
			BearerMethodsSupported: []string{"header"},
			ScopesSupported:        []string{"openid", "profile", "email", "groups"},
			ResourceName:           "musterd",
		},
	}, nil
}

// callers is the check of requests: nil (the static token's) when OAuth
// is off; else the OAuth tokens' check, each user it lets in seen by
// single sign-on (sso.go), and beside it the static token when one is set
// (musterd's CLI and automation keep working; its caller is nobody in
// particular).
func (d *daemon) callers(token string) identity.Authenticator {
	if d.Inbound == nil {
		return nil
	}
	users := d.SSO.authenticator(d.Inbound.auth)
	if token == "" {
		return users
	}
	return staticOr{static: shared.NewBearer(token), users: users}
}

// staticOr lets in the static token, else whom users lets in.
type staticOr struct {
	static shared.Bearer
	users  identity.Authenticator
}

func (a staticOr) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	if a.static.Authorized(r) {
		return identity.Identity{}, nil
	}
	return a.users.Authenticate(r)
}

// mount serves the metadata, at the root and under the MCP endpoint's
// path, never behind a token: it is how a client learns where to get one.
func (in *inbound) mount(mux *http.ServeMux) {
	if in == nil {
		return
	}
	h := auth.ProtectedResourceMetadataHandler(in.metadata)
	for _, path := range []string{metadataPath, metadataPath + "/mcp"} {
		mux.Handle(path, h)
	}
}
