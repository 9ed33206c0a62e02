package authserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/oauth/store"
)

// Defaults of Options.
const (
	// DefaultAccessTokenTTL is how long an access token lasts at most: 30
	// minutes, less when the provider's own token expires sooner.
	DefaultAccessTokenTTL = 30 * time.Minute
	// DefaultSessionDuration is how long a login lasts: a refresh token's
	// lifetime, renewed at each rotation (muster's 720h).
	DefaultSessionDuration = 720 * time.Hour
	// RequestTTL bounds an authorization request: from /oauth/authorize to
	// the code's exchange.
	RequestTTL = 10 * time.Minute
	// upstreamEarly is how long before its expiry an upstream token is
	// refreshed.
	upstreamEarly = 30 * time.Second
)

// The paths the Server serves, below Options.Issuer.
const (
	PathAuthorize = "/oauth/authorize"
	PathCallback  = "/oauth/callback"
	PathToken     = "/oauth/token"
	PathRevoke    = "/oauth/revoke"
	PathRegister  = "/oauth/register"
	PathMetadata  = "/.well-known/oauth-authorization-server"
	PathOIDC      = "/.well-known/openid-configuration"
	// PathConsent is where a user approves or denies a client that is
	// not the operator's before it may log them in.
	PathConsent = "/oauth/authorize/consent"
)

// Upstream is the identity provider users log in at.
type Upstream struct {
	// Issuer is the provider's issuer URL (OpenID Connect discovery).
	// Required.
	Issuer string
	// ClientID and ClientSecret are musterd's client at the provider; its
	// redirect URI there is Options.Issuer + PathCallback. ClientID is
	// required.
	ClientID     string
	ClientSecret string
	// ConnectorID, when set, is sent as Dex's connector_id, skipping its
	// choice of connectors.
	ConnectorID string
	// Scopes are asked of the provider at each login. Default: openid
	// profile email groups offline_access.
	Scopes []string
	// ExtraScopes, when set, is asked at each login for scopes to add
	// (Dex's audience:server:client_id:… of the servers that get the
	// user's ID token).
	ExtraScopes func() []string
}

// Options configures New.
type Options struct {
	// Issuer is musterd's base URL, the authorization server's issuer:
	// absolute, https unless the host is loopback. Required.
	Issuer string
	// Upstream is the provider users log in at. Required.
	Upstream Upstream
	// HTTPClient reaches the provider. Default: http.DefaultClient.
	HTTPClient *http.Client
	// Store keeps clients, logins and tokens (memory, or a sealed
	// Valkey). Default: a memory store of this process.
	Store store.Store
	// RegistrationToken, when set, lets a confidential client register
	// with it as bearer token.
	RegistrationToken string
	// AllowPublicClientRegistration lets anyone register, and lets public
	// clients register at all. Default false.
	AllowPublicClientRegistration bool
	// AllowLocalhostRedirectURIs accepts http redirect URIs on a loopback
	// host. Default false (Options has no way to tell unset from false:
	// the caller applies muster's default, true).
	AllowLocalhostRedirectURIs bool
	// TrustedPublicRegistrationSchemes are redirect URI schemes ("cursor")
	// whose clients may register without the token;
	// TrustedPublicRegistrationRedirectURIs the exact URIs.
	TrustedPublicRegistrationSchemes      []string
	TrustedPublicRegistrationRedirectURIs []string
	// AllowedOrigins are the origins of browser clients answered with
	// CORS headers at the token, revocation and metadata endpoints.
	// Default: none (no CORS).
	AllowedOrigins []string
	// EnableCIMD accepts as client ID the https URL of a Client ID
	// Metadata Document, fetched then (kept an hour). Default false (the
	// caller applies muster's default, true).
	EnableCIMD bool
	// CIMDAllowPrivateAddresses lets those documents be fetched from
	// loopback, private and link-local addresses. Default false: anyone
	// can name any URL as client ID.
	CIMDAllowPrivateAddresses bool
	// AccessTokenTTL is DefaultAccessTokenTTL when zero.
	AccessTokenTTL time.Duration
	// SessionDuration is DefaultSessionDuration when zero.
	SessionDuration time.Duration
	// Now is the clock of token expiries. Default: time.Now.
	Now func() time.Time
	// Logger gets what the server does, never a credential. Default: none.
	Logger *slog.Logger
}

func (o *Options) defaults() error {
	u, err := url.Parse(o.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("authserver: issuer %q is not an absolute http(s) URL", o.Issuer)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("authserver: issuer %q must be https (http only on a loopback host)", o.Issuer)
	}
	o.Issuer = strings.TrimSuffix(o.Issuer, "/")
	if o.Upstream.Issuer == "" || o.Upstream.ClientID == "" {
		return errors.New("authserver: the upstream provider's issuer and client ID are required")
	}
	if len(o.Upstream.Scopes) == 0 {
		o.Upstream.Scopes = []string{"openid", "profile", "email", "groups", "offline_access"}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Store == nil {
		o.Store = store.NewMemory(store.MemoryOptions{})
	}
	if o.AccessTokenTTL <= 0 {
		o.AccessTokenTTL = DefaultAccessTokenTTL
	}
	if o.SessionDuration <= 0 {
		o.SessionDuration = DefaultSessionDuration
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
