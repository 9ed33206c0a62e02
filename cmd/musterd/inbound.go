package main

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/oauth/authserver"
	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
	"github.com/musterd/musterd/pkg/oauth/store"
	"github.com/musterd/musterd/pkg/oauth/verify"
)

// Who musterd lets in when config.yaml's aggregator.oauth.server is
// enabled: as muster does, the access tokens musterd's own authorization
// server issued (package oauth/authserver: clients log in through
// musterd, which sends their users to the identity provider), the tokens
// of its identity provider (dex.issuerUrl) issued for musterd
// (dex.clientId, or one of trustedAudiences), and the tokens of each of
// trustedIssuers on that issuer's terms. Every MCP request and every
// request the static token guarded then needs one of them, and the
// caller is the token's user. musterd's protected-resource metadata names
// musterd itself as the authorization server.

// metadataPath is where musterd's protected-resource metadata (RFC 9728)
// is served, and below it the MCP endpoint's.
const metadataPath = "/.well-known/oauth-protected-resource"

// inbound is the check of callers' tokens, and the metadata that tells a
// client where to get one.
type inbound struct {
	auth     identity.Authenticator
	metadata *oauthex.ProtectedResourceMetadata
	// server is musterd's authorization server.
	server *authserver.Server
}

// newInbound returns nil when aggregator.oauth.server is off: the static
// token's check applies.
func newInbound(d *daemon, srv oauthconfig.Server, outbound *http.Transport, log *slog.Logger) (*inbound, error) {
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
	kv := store.NewMemory(store.MemoryOptions{})
	if srv.Storage.Type == oauthconfig.StorageValkey {
		if kv, err = sealedStore(srv, outbound); err != nil {
			return nil, err
		}
	}
	as, err := authserver.New(authserver.Options{
		Issuer: base,
		Upstream: authserver.Upstream{Issuer: srv.Dex.IssuerURL, ClientID: srv.Dex.ClientID, ClientSecret: srv.Dex.ClientSecret.Reveal(),
			ConnectorID: srv.Dex.ConnectorID, ExtraScopes: d.audienceScopes},
		HTTPClient:                            &http.Client{Transport: outbound, Timeout: 30 * time.Second},
		Store:                                 kv,
		RegistrationToken:                     srv.RegistrationToken.Reveal(),
		AllowPublicClientRegistration:         srv.AllowPublicClientRegistration,
		AllowLocalhostRedirectURIs:            srv.AllowLocalhostRedirectURIs,
		TrustedPublicRegistrationSchemes:      srv.TrustedPublicRegistrationSchemes,
		TrustedPublicRegistrationRedirectURIs: srv.TrustedPublicRegistrationRedirectURIs,
		SessionDuration:                       srv.SessionDuration,
		AllowedOrigins:                        srv.AllowedOrigins,
		EnableCIMD:                            srv.EnableCIMD,
		Logger:                                log,
	})
	if err != nil {
		return nil, err
	}
	return &inbound{
		server: as,
		auth: as.Authenticator(authserver.AuthenticatorOptions{
			Others:              v.Authenticator(verify.AuthenticatorOptions{ResourceMetadataURL: base + metadataPath}),
			ResourceMetadataURL: base + metadataPath,
		}),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               srv.EffectiveResourceIdentifier(),
			AuthorizationServers:   []string{base},
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
	as := in.server.Handler()
	for _, path := range in.server.Paths() {
		mux.Handle(path, as)
	}
}

// audienceName is what an audience of spec.auth.requiredAudiences may be
// to become a scope: nothing that could end the scope or start another.
var audienceName = regexp.MustCompile(`^[A-Za-z0-9._:/@-]+$`)

// audienceScopes are the scopes a login through musterd asks the provider
// for besides its own: Dex's audience:server:client_id:<aud> for each of
// requiredAudiences of the servers that get the user's ID token, so that
// the token Dex issues is valid for them too.
func (d *daemon) audienceScopes() []string {
	var scopes []string
	for _, e := range d.Index.List(v1alpha1.KindMCPServer) {
		server, ok := e.Object.(*v1alpha1.MCPServer)
		if !ok || server == nil || server.Spec.Auth == nil || !server.Spec.Auth.ForwardToken {
			continue
		}
		for _, aud := range server.Spec.Auth.RequiredAudiences {
			if audienceName.MatchString(aud) {
				scopes = append(scopes, "audience:server:client_id:"+aud)
			}
		}
	}
	return scopes
}
