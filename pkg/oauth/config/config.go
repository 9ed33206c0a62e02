package config

import (
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"strings"
	"time"
)

// muster's defaults, by its names.
const (
	// DefaultServerCallbackPath is where the provider sends a user back to
	// the server role; the client role's callback must differ from it.
	DefaultServerCallbackPath = "/oauth/callback"
	// DefaultProxyCallbackPath is mcpClient.callbackPath's default.
	DefaultProxyCallbackPath = "/oauth/proxy/callback"
	// DefaultCIMDPath is mcpClient.cimd.path's default.
	DefaultCIMDPath = "/.well-known/oauth-client.json"
	// DefaultCIMDScopes is mcpClient.cimd.scopes' default.
	DefaultCIMDScopes = "openid profile email groups offline_access"
	// DefaultProvider is server.provider's default.
	DefaultProvider = ProviderDex
	// DefaultStorageType is server.storage.type's default.
	DefaultStorageType = StorageMemory
	// DefaultValkeyKeyPrefix is server.storage.valkey.keyPrefix's default.
	DefaultValkeyKeyPrefix = "muster:"
	// DefaultSessionDuration is server.sessionDuration's default: 30 days,
	// Dex's absoluteLifetime.
	DefaultSessionDuration = 30 * 24 * time.Hour
)

// The providers and storage types muster knows.
const (
	ProviderDex    = "dex"
	ProviderGoogle = "google"
	StorageMemory  = "memory"
	StorageValkey  = "valkey"
)

// EncryptionKeySize is the size of server.encryptionKey once decoded: an
// AES-256 key.
const EncryptionKeySize = 32

// Config is the aggregator.oauth section. Its Go field names are muster's,
// so that its JSON is muster's OAuthConfig as muster encodes it (no JSON
// tags), secrets redacted; each yaml tag is the key it is read from.
type Config struct {
	// MCPClient is musterd as an OAuth client of the MCP servers it runs,
	// signing in on its users' behalf.
	MCPClient MCPClient `yaml:"mcpClient"`
	// Server is musterd as the OAuth authorization server protecting its
	// own MCP endpoint.
	Server Server `yaml:"server"`
}

// MCPClient is oauth.mcpClient.
type MCPClient struct {
	// Enabled turns the role on (default false).
	Enabled bool `yaml:"enabled"`
	// PublicURL is where musterd is reached from a browser; the callback
	// and the CIMD URL are below it. Required when enabled.
	PublicURL string `yaml:"publicUrl"`
	// ClientID is the client ID musterd presents: a CIMD URL. Empty: the
	// CIMD musterd serves itself (EffectiveClientID).
	ClientID string `yaml:"clientId"`
	// CallbackPath is the path of the callback (DefaultProxyCallbackPath);
	// never the server role's.
	CallbackPath string `yaml:"callbackPath"`
	// CIMD is the Client ID Metadata Document musterd serves.
	CIMD CIMD `yaml:"cimd"`
	// PostLoginRedirectAllowlist are the absolute http(s) URL prefixes a
	// sign-in may send the browser on to when it is done; empty: none.
	PostLoginRedirectAllowlist []string `yaml:"postLoginRedirectAllowlist"`
}

// CIMD is oauth.mcpClient.cimd.
type CIMD struct {
	// Path is where the document is served (DefaultCIMDPath).
	Path string `yaml:"path"`
	// Scopes are the scopes it advertises, space-separated
	// (DefaultCIMDScopes).
	Scopes string `yaml:"scopes"`
}

// EffectiveClientID is ClientID, or the URL of the CIMD musterd serves
// below PublicURL; "" without either.
func (c MCPClient) EffectiveClientID() string {
	if c.ClientID != "" {
		return c.ClientID
	}
	if c.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(c.PublicURL, "/") + c.CIMD.Path
}

// RedirectURI is the callback's full URL.
func (c MCPClient) RedirectURI() string {
	return strings.TrimSuffix(c.PublicURL, "/") + c.CallbackPath
}

// Server is oauth.server.
type Server struct {
	// Enabled turns the role on (default false).
	Enabled bool `yaml:"enabled"`
	// BaseURL is musterd's public URL, the issuer. Required when enabled.
	BaseURL string `yaml:"baseUrl"`
	// Provider is the identity provider users sign in with: ProviderDex
	// (default) or ProviderGoogle (refused while enabled: musterd does not
	// implement it yet).
	Provider string `yaml:"provider"`
	// Dex is the Dex provider; its issuerUrl and clientId are required
	// when enabled with provider dex.
	Dex Dex `yaml:"dex"`
	// Google is the Google provider.
	Google Google `yaml:"google"`
	// Storage is where tokens and client registrations are kept.
	Storage Storage `yaml:"storage"`
	// RegistrationToken is the token dynamic client registration needs
	// (unless AllowPublicClientRegistration); RegistrationTokenFile is the
	// file it was read from, if any.
	RegistrationToken     Secret `yaml:"registrationToken"`
	RegistrationTokenFile string `yaml:"registrationTokenFile"`
	// AllowPublicClientRegistration lets any client register without the
	// token (default false).
	AllowPublicClientRegistration bool `yaml:"allowPublicClientRegistration"`
	// EncryptionKey is the AES-256 key encrypting tokens at rest, base64 of
	// EncryptionKeySize bytes (EncryptionKeyBytes decodes it);
	// EncryptionKeyFile the file it was read from, if any.
	EncryptionKey     Secret `yaml:"encryptionKey"`
	EncryptionKeyFile string `yaml:"encryptionKeyFile"`
	// TrustedPublicRegistrationSchemes are the redirect URI schemes
	// ("cursor", "vscode") that may register without the token.
	TrustedPublicRegistrationSchemes []string `yaml:"trustedPublicRegistrationSchemes"`
	// TrustedPublicRegistrationRedirectURIs are the https redirect URIs
	// that may register without the token.
	TrustedPublicRegistrationRedirectURIs []string `yaml:"trustedPublicRegistrationRedirectURIs"`
	// EnableCIMD accepts clients identified by a Client ID Metadata
	// Document (default true).
	EnableCIMD bool `yaml:"enableCIMD"`
	// AllowLocalhostRedirectURIs accepts http://localhost redirect URIs,
	// for native apps (default true).
	AllowLocalhostRedirectURIs bool `yaml:"allowLocalhostRedirectURIs"`
	// SessionDuration is how long a sign-in lasts: the refresh token's
	// lifetime (DefaultSessionDuration). Its JSON is a duration's text.
	SessionDuration time.Duration `yaml:"sessionDuration"`
	// AllowedOrigins are the CORS origins of browser clients, read from
	// muster's comma-separated list; empty: no CORS.
	AllowedOrigins []string `yaml:"allowedOrigins" split:"commas"`
	// TrustedAudiences are client IDs whose ID tokens from the provider
	// are accepted as bearer tokens.
	TrustedAudiences []string `yaml:"trustedAudiences"`
	// TrustedIssuers are the external issuers whose tokens are accepted
	// for token exchange.
	TrustedIssuers []TrustedIssuer `yaml:"trustedIssuers"`
	// TrustedProxyCIDRs are the proxies whose X-Forwarded-Proto and
	// X-Forwarded-Host are believed.
	TrustedProxyCIDRs []netip.Prefix `yaml:"trustedProxyCIDRs"`
	// ResourceIdentifier is musterd's RFC 8707 resource URI; empty:
	// BaseURL.
	ResourceIdentifier string `yaml:"resourceIdentifier"`
	// TokenExchangeBroker is brokered RFC 8693 token exchange for
	// external confidential clients.
	TokenExchangeBroker TokenExchangeBroker `yaml:"tokenExchangeBroker"`
}

// MarshalJSON encodes Server with SessionDuration as a duration's text
// ("720h0m0s"), not nanoseconds.
func (s Server) MarshalJSON() ([]byte, error) {
	type plain Server // without this method
	return json.Marshal(struct {
		plain
		SessionDuration string
	}{plain(s), s.SessionDuration.String()})
}

// EncryptionKeyBytes is EncryptionKey decoded; nil when unset. Load has
// checked that it decodes to EncryptionKeySize bytes.
func (s Server) EncryptionKeyBytes() []byte {
	if !s.EncryptionKey.IsSet() {
		return nil
	}
	key, err := base64.StdEncoding.DecodeString(s.EncryptionKey.Reveal())
	if err != nil {
		return nil
	}
	return key
}

// EffectiveResourceIdentifier is ResourceIdentifier, or BaseURL.
func (s Server) EffectiveResourceIdentifier() string {
	if s.ResourceIdentifier != "" {
		return s.ResourceIdentifier
	}
	return s.BaseURL
}

// Dex is oauth.server.dex.
type Dex struct {
	// IssuerURL is Dex's issuer.
	IssuerURL string `yaml:"issuerUrl"`
	// ClientID is musterd's client at Dex.
	ClientID string `yaml:"clientId"`
	// ClientSecret is its secret; ClientSecretFile the file it was read
	// from, if any.
	ClientSecret     Secret `yaml:"clientSecret"`
	ClientSecretFile string `yaml:"clientSecretFile"`
	// ConnectorID picks Dex's connector, skipping its choice page.
	ConnectorID string `yaml:"connectorId"`
	// AllowPrivateIPOIDC lets the issuer resolve to a private or loopback
	// address (default false).
	AllowPrivateIPOIDC bool `yaml:"allowPrivateIPOIDC"`
}

// Google is oauth.server.google.
type Google struct {
	ClientID         string `yaml:"clientId"`
	ClientSecret     Secret `yaml:"clientSecret"`
	ClientSecretFile string `yaml:"clientSecretFile"`
}

// Storage is oauth.server.storage.
type Storage struct {
	// Type is StorageMemory (default) or StorageValkey.
	Type string `yaml:"type"`
	// Valkey is the Valkey store, when Type is StorageValkey.
	Valkey Valkey `yaml:"valkey"`
}

// Valkey is oauth.server.storage.valkey.
type Valkey struct {
	// URL is the server's address (host:port, or a URL). Required when
	// the storage type is valkey.
	URL string `yaml:"url"`
	// Password authenticates to it; PasswordFile is the file it was read
	// from, if any.
	Password     Secret `yaml:"password"`
	PasswordFile string `yaml:"passwordFile"`
	// TLSEnabled speaks TLS to it; TLSServerName is the name its
	// certificate is checked against, if not the address's.
	TLSEnabled    bool   `yaml:"tlsEnabled"`
	TLSServerName string `yaml:"tlsServerName"`
	// KeyPrefix prefixes every key (DefaultValkeyKeyPrefix).
	KeyPrefix string `yaml:"keyPrefix"`
	// DB is the database number (default 0).
	DB int `yaml:"db"`
}

// TrustedIssuer is one entry of oauth.server.trustedIssuers.
type TrustedIssuer struct {
	// Issuer is the iss claim expected; required.
	Issuer string `yaml:"issuer"`
	// JwksURL is where its keys are; required.
	JwksURL string `yaml:"jwksUrl"`
	// AllowedAudiences are the aud values accepted; empty: any.
	AllowedAudiences []string `yaml:"allowedAudiences"`
	// AllowedScopes cap the scopes of its tokens; nil: no cap.
	AllowedScopes []string `yaml:"allowedScopes"`
	// AllowedClaims are claims each token must match: exact strings, or
	// globs ('*' any run of characters, '?' one).
	AllowedClaims map[string]string `yaml:"allowedClaims"`
	// SubjectClaim names the claim that becomes the subject; empty: sub.
	SubjectClaim string `yaml:"subjectClaim"`
	// AllowPrivateIPJWKS lets JwksURL resolve to a private or loopback
	// address; AllowPrivateIPJWKSHosts does it for these hosts only.
	AllowPrivateIPJWKS      bool     `yaml:"allowPrivateIPJWKS"`
	AllowPrivateIPJWKSHosts []string `yaml:"allowPrivateIPJWKSHosts"`
	// AcceptedTypHeaders are the JWT typ headers accepted; empty: at+jwt.
	AcceptedTypHeaders []string `yaml:"acceptedTypHeaders"`
}

// TokenExchangeBroker is oauth.server.tokenExchangeBroker.
type TokenExchangeBroker struct {
	// ClientAudiences are, per broker client ID, the audiences it may ask
	// for.
	ClientAudiences map[string][]string `yaml:"clientAudiences"`
	// BrokerClients are the confidential broker clients seeded at start,
	// by client ID.
	BrokerClients map[string]BrokerClient `yaml:"brokerClients"`
	// Targets are the downstream Dex instances, by audience.
	Targets map[string]BrokerTarget `yaml:"targets"`
	// AllowPrivateIP lets the targets' token endpoints resolve to private
	// or loopback addresses (default false).
	AllowPrivateIP bool `yaml:"allowPrivateIP"`
}

// Enabled reports whether brokered exchange is configured: it has targets.
func (b TokenExchangeBroker) Enabled() bool { return len(b.Targets) > 0 }

// BrokerTarget is one of tokenExchangeBroker.targets.
type BrokerTarget struct {
	// DexTokenEndpoint is the downstream Dex's token endpoint; required.
	DexTokenEndpoint string `yaml:"dexTokenEndpoint"`
	// ExpectedIssuer is the iss of the exchanged token; empty: the
	// endpoint without /token.
	ExpectedIssuer string `yaml:"expectedIssuer"`
	// ConnectorID is the downstream Dex connector trusting the subject
	// token's issuer; required.
	ConnectorID string `yaml:"connectorId"`
	// Scopes are asked for downstream, space-separated.
	Scopes string `yaml:"scopes"`
	// ClientCredentialsSecretRef is the Kubernetes Secret with the
	// downstream client's credentials.
	ClientCredentialsSecretRef *SecretRef `yaml:"clientCredentialsSecretRef"`
}

// BrokerClient is one of tokenExchangeBroker.brokerClients.
type BrokerClient struct {
	// ClientCredentialsSecretRef is the Kubernetes Secret with the
	// client's ID and secret.
	ClientCredentialsSecretRef *SecretRef `yaml:"clientCredentialsSecretRef"`
	// Scopes are recorded on the client.
	Scopes []string `yaml:"scopes"`
}

// SecretRef names a Kubernetes Secret holding client credentials.
type SecretRef struct {
	// Name is required.
	Name string `yaml:"name"`
	// Namespace defaults to musterd's.
	Namespace string `yaml:"namespace"`
	// ClientIDKey and ClientSecretKey are the data keys ("client-id",
	// "client-secret" when empty).
	ClientIDKey     string `yaml:"clientIdKey"`
	ClientSecretKey string `yaml:"clientSecretKey"`
}

// Default is the section as muster has it when config.yaml says nothing
// of it: both roles off.
func Default() Config {
	return Config{
		MCPClient: MCPClient{
			CallbackPath: DefaultProxyCallbackPath,
			CIMD:         CIMD{Path: DefaultCIMDPath, Scopes: DefaultCIMDScopes},
		},
		Server: Server{
			Provider:                   DefaultProvider,
			Storage:                    Storage{Type: DefaultStorageType, Valkey: Valkey{KeyPrefix: DefaultValkeyKeyPrefix}},
			EnableCIMD:                 true,
			AllowLocalhostRedirectURIs: true,
			SessionDuration:            DefaultSessionDuration,
		},
	}
}
