package config_test

import (
	"encoding/base64"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/musterd/musterd/pkg/oauth/config"
)

var key32 = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// Without the section, or with it empty, both roles are off and every key
// has muster's default.
func TestWithoutTheSectionEveryKeyHasMustersDefault(t *testing.T) {
	want := config.Config{
		MCPClient: config.MCPClient{
			CallbackPath: "/oauth/proxy/callback",
			CIMD:         config.CIMD{Path: "/.well-known/oauth-client.json", Scopes: "openid profile email groups offline_access"},
		},
		Server: config.Server{
			Provider:                   "dex",
			Storage:                    config.Storage{Type: "memory", Valkey: config.Valkey{KeyPrefix: "muster:"}},
			EnableCIMD:                 true,
			AllowLocalhostRedirectURIs: true,
			SessionDuration:            720 * time.Hour,
		},
	}
	assert.Equal(t, want, config.Default())
	for _, text := range []string{"", "{}", "mcpClient:\nserver:\n", "server: {storage: {valkey: {}}, dex: ~}\n",
		// Given empty, a key with a default takes it, as muster falls
		// back to it where the value is used.
		"mcpClient: {callbackPath: '', cimd: {path: '', scopes: ''}}\nserver: {provider: '', storage: {type: '', valkey: {keyPrefix: ''}}}\n"} {
		cfg, err := load(t, text)
		require.NoError(t, err, text)
		assert.Equal(t, want, cfg, text)
	}
}

// everyKey sets every key muster's types.go has to a value that is not its
// default.
func everyKey(t *testing.T) string {
	return `
mcpClient:
  enabled: true
  publicUrl: https://muster.example.com
  clientId: https://muster.example.com/cimd.json
  callbackPath: /cb
  cimd: {path: /cimd.json, scopes: openid}
  postLoginRedirectAllowlist: [https://app.example.com/done]
server:
  enabled: true
  baseUrl: https://muster.example.com
  provider: dex
  dex:
    issuerUrl: https://dex.example.com
    clientId: muster
    clientSecret: dex-secret
    connectorId: github
    allowPrivateIPOIDC: true
  google: {clientId: g, clientSecret: google-secret}
  storage:
    type: valkey
    valkey: {url: "valkey:6379", password: valkey-password, tlsEnabled: true, tlsServerName: valkey.example.com, keyPrefix: "m:", db: 3}
  registrationToken: reg-token
  allowPublicClientRegistration: true
  encryptionKey: ` + key32 + `
  trustedPublicRegistrationSchemes: [cursor]
  trustedPublicRegistrationRedirectURIs: [https://claude.ai/api/mcp/auth_callback]
  enableCIMD: false
  allowLocalhostRedirectURIs: false
  sessionDuration: 168h
  allowedOrigins: "https://a.example.com, https://b.example.com"
  trustedAudiences: [dex-k8s-authenticator]
  trustedIssuers:
  - issuer: https://issuer.example.com
    jwksUrl: https://issuer.example.com/keys
    allowedAudiences: [portal]
    allowedScopes: [read]
    allowedClaims: {sub: "system:serviceaccount:ns:*"}
    subjectClaim: email
    allowPrivateIPJWKS: true
    allowPrivateIPJWKSHosts: [dex.internal]
    acceptedTypHeaders: [""]
  trustedProxyCIDRs: [10.1.2.3/8, "::1/128"]
  resourceIdentifier: https://muster.example.com/mcp
  tokenExchangeBroker:
    clientAudiences: {portal-backend: [cluster-a]}
    brokerClients:
      portal-backend:
        clientCredentialsSecretRef: {name: broker, namespace: ns, clientIdKey: id, clientSecretKey: secret}
        scopes: [openid]
    targets:
      cluster-a:
        dexTokenEndpoint: https://dex.cluster-a.example.com/token
        expectedIssuer: https://dex.cluster-a.example.com
        connectorId: main-dex
        scopes: openid groups
        clientCredentialsSecretRef: {name: exchange}
    allowPrivateIP: true
`
}

func TestEveryKeyDecodesToTheTypedConfig(t *testing.T) {
	cfg, err := load(t, everyKey(t))
	require.NoError(t, err)
	want := config.Config{
		MCPClient: config.MCPClient{
			Enabled: true, PublicURL: "https://muster.example.com", ClientID: "https://muster.example.com/cimd.json",
			CallbackPath: "/cb", CIMD: config.CIMD{Path: "/cimd.json", Scopes: "openid"},
			PostLoginRedirectAllowlist: []string{"https://app.example.com/done"},
		},
		Server: config.Server{
			Enabled: true, BaseURL: "https://muster.example.com", Provider: "dex",
			Dex: config.Dex{IssuerURL: "https://dex.example.com", ClientID: "muster", ClientSecret: config.NewSecret("dex-secret"),
				ConnectorID: "github", AllowPrivateIPOIDC: true},
			Google: config.Google{ClientID: "g", ClientSecret: config.NewSecret("google-secret")},
			Storage: config.Storage{Type: "valkey", Valkey: config.Valkey{URL: "valkey:6379", Password: config.NewSecret("valkey-password"),
				TLSEnabled: true, TLSServerName: "valkey.example.com", KeyPrefix: "m:", DB: 3}},
			RegistrationToken:                     config.NewSecret("reg-token"),
			AllowPublicClientRegistration:         true,
			EncryptionKey:                         config.NewSecret(key32),
			TrustedPublicRegistrationSchemes:      []string{"cursor"},
			TrustedPublicRegistrationRedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"},
			SessionDuration:                       168 * time.Hour,
			AllowedOrigins:                        []string{"https://a.example.com", "https://b.example.com"},
			TrustedAudiences:                      []string{"dex-k8s-authenticator"},
			TrustedIssuers: []config.TrustedIssuer{{
				Issuer: "https://issuer.example.com", JwksURL: "https://issuer.example.com/keys",
				AllowedAudiences: []string{"portal"}, AllowedScopes: []string{"read"},
				AllowedClaims: map[string]string{"sub": "system:serviceaccount:ns:*"}, SubjectClaim: "email",
				AllowPrivateIPJWKS: true, AllowPrivateIPJWKSHosts: []string{"dex.internal"}, AcceptedTypHeaders: []string{""},
			}},
			TrustedProxyCIDRs:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")},
			ResourceIdentifier: "https://muster.example.com/mcp",
			TokenExchangeBroker: config.TokenExchangeBroker{
				ClientAudiences: map[string][]string{"portal-backend": {"cluster-a"}},
				BrokerClients: map[string]config.BrokerClient{"portal-backend": {
					ClientCredentialsSecretRef: &config.SecretRef{Name: "broker", Namespace: "ns", ClientIDKey: "id", ClientSecretKey: "secret"},
					Scopes:                     []string{"openid"},
				}},
				Targets: map[string]config.BrokerTarget{"cluster-a": {
					DexTokenEndpoint: "https://dex.cluster-a.example.com/token", ExpectedIssuer: "https://dex.cluster-a.example.com",
					ConnectorID: "main-dex", Scopes: "openid groups", ClientCredentialsSecretRef: &config.SecretRef{Name: "exchange"},
				}},
				AllowPrivateIP: true,
			},
		},
	}
	assert.Equal(t, want, cfg)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", string(cfg.Server.EncryptionKeyBytes()))
	assert.True(t, cfg.Server.TokenExchangeBroker.Enabled())

	// Each leaf of the typed config differs from its default: no key of
	// the text above was dropped on the way.
	var same []string
	sameAsDefault(reflect.ValueOf(cfg), reflect.ValueOf(config.Default()), "oauth", &same)
	assert.Equal(t, []string{
		"oauth.Server.Provider", // dex, its default, is the one provider an enabled server takes
		// The *File keys have tests of their own: a key and its twin
		// cannot both be set.
		"oauth.Server.Dex.ClientSecretFile", "oauth.Server.Google.ClientSecretFile", "oauth.Server.Storage.Valkey.PasswordFile",
		"oauth.Server.RegistrationTokenFile", "oauth.Server.EncryptionKeyFile",
	}, same, "keys left at their default")
}

// sameAsDefault lists the leaves of got equal to def's.
func sameAsDefault(got, def reflect.Value, path string, out *[]string) {
	if got.Kind() == reflect.Struct && got.Type() != reflect.TypeFor[config.Secret]() {
		for i := range got.NumField() {
			sameAsDefault(got.Field(i), def.Field(i), path+"."+got.Type().Field(i).Name, out)
		}
		return
	}
	if reflect.DeepEqual(got.Interface(), def.Interface()) {
		*out = append(*out, path)
	}
}

// mustersKeys are the keys of muster's OAuthConfig (internal/config/
// types.go), each as a path.
var mustersKeys = `
mcpClient.enabled mcpClient.publicUrl mcpClient.clientId mcpClient.callbackPath mcpClient.cimd.path mcpClient.cimd.scopes
mcpClient.postLoginRedirectAllowlist
server.enabled server.baseUrl server.provider
server.dex.issuerUrl server.dex.clientId server.dex.clientSecret server.dex.clientSecretFile server.dex.connectorId server.dex.allowPrivateIPOIDC
server.google.clientId server.google.clientSecret server.google.clientSecretFile
server.storage.type server.storage.valkey.url server.storage.valkey.password server.storage.valkey.passwordFile
server.storage.valkey.tlsEnabled server.storage.valkey.tlsServerName server.storage.valkey.keyPrefix server.storage.valkey.db
server.registrationToken server.registrationTokenFile server.allowPublicClientRegistration server.encryptionKey server.encryptionKeyFile
server.trustedPublicRegistrationSchemes server.trustedPublicRegistrationRedirectURIs server.enableCIMD server.allowLocalhostRedirectURIs
server.sessionDuration server.allowedOrigins server.trustedAudiences
server.trustedIssuers[].issuer server.trustedIssuers[].jwksUrl server.trustedIssuers[].allowedAudiences server.trustedIssuers[].allowedScopes
server.trustedIssuers[].allowedClaims server.trustedIssuers[].subjectClaim server.trustedIssuers[].allowPrivateIPJWKS
server.trustedIssuers[].allowPrivateIPJWKSHosts server.trustedIssuers[].acceptedTypHeaders
server.trustedProxyCIDRs server.resourceIdentifier
server.tokenExchangeBroker.clientAudiences server.tokenExchangeBroker.allowPrivateIP
server.tokenExchangeBroker.brokerClients.*.clientCredentialsSecretRef.name server.tokenExchangeBroker.brokerClients.*.clientCredentialsSecretRef.namespace
server.tokenExchangeBroker.brokerClients.*.clientCredentialsSecretRef.clientIdKey server.tokenExchangeBroker.brokerClients.*.clientCredentialsSecretRef.clientSecretKey
server.tokenExchangeBroker.brokerClients.*.scopes
server.tokenExchangeBroker.targets.*.dexTokenEndpoint server.tokenExchangeBroker.targets.*.expectedIssuer server.tokenExchangeBroker.targets.*.connectorId
server.tokenExchangeBroker.targets.*.scopes
server.tokenExchangeBroker.targets.*.clientCredentialsSecretRef.name server.tokenExchangeBroker.targets.*.clientCredentialsSecretRef.namespace
server.tokenExchangeBroker.targets.*.clientCredentialsSecretRef.clientIdKey server.tokenExchangeBroker.targets.*.clientCredentialsSecretRef.clientSecretKey
`

// The typed config has exactly muster's keys.
func TestTheKeysAreMusters(t *testing.T) {
	want := strings.Fields(mustersKeys)
	got := leafKeys(reflect.TypeFor[config.Config](), "")
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got)
}

// leafKeys lists the YAML key paths of t's leaves: [] marks a list's
// entries, * a map's.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		path := strings.TrimPrefix(prefix+"."+name, ".")
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			out = append(out, leafKeys(ft.Elem(), path)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft.Elem().PkgPath() == t.PkgPath():
			out = append(out, leafKeys(ft.Elem(), path+"[]")...)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			out = append(out, leafKeys(ft.Elem(), path+".*")...)
		case ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() && ft != reflect.TypeFor[config.Secret]():
			out = append(out, leafKeys(ft, path)...)
		default:
			out = append(out, path)
		}
	}
	return out
}

// What muster's harness writes for a scenario with a mock identity
// provider, and one that muster also serves as its OAuth server with
// trusted issuers, loads.
func TestTheHarnessConfigsLoad(t *testing.T) {
	for name, text := range map[string]string{
		"client only": `{mcpClient: {enabled: true, publicUrl: "http://localhost:21203", callbackPath: /oauth/proxy/callback}}`,
		"server": `
mcpClient: {enabled: true, publicUrl: "http://localhost:21203", callbackPath: /oauth/proxy/callback}
server:
  enabled: true
  baseUrl: http://localhost:21203
  provider: dex
  dex: {issuerUrl: "https://localhost:40123", clientId: muster-client, clientSecret: muster-secret}
  storage: {type: memory}
  allowLocalhostRedirectURIs: true
  allowPublicClientRegistration: true
  resourceIdentifier: http://localhost:21203
  trustedIssuers:
  - {issuer: "https://127.0.0.1:40124", jwksUrl: "https://127.0.0.1:40124/jwks", allowPrivateIPJWKS: true, allowedAudiences: [a], subjectClaim: email, acceptedTypHeaders: [""]}
`,
	} {
		cfg, err := load(t, text)
		require.NoError(t, err, name)
		assert.True(t, cfg.MCPClient.Enabled)
		assert.Equal(t, "http://localhost:21203/oauth/proxy/callback", cfg.MCPClient.RedirectURI())
		assert.Equal(t, "http://localhost:21203/.well-known/oauth-client.json", cfg.MCPClient.EffectiveClientID())
	}
}

// Provider google parses, and is refused only while the server role is on.
func TestGoogleParsesAndIsRefusedWhileTheServerIsEnabled(t *testing.T) {
	cfg, err := load(t, section(t, kv{"server.provider", "google"}, kv{"server.google.clientId", "g"}))
	require.NoError(t, err)
	assert.Equal(t, "google", cfg.Server.Provider)
	assert.Equal(t, "g", cfg.Server.Google.ClientID)

	_, err = load(t, section(t, append(enabledServer(), kv{"server.provider", "google"})...))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "aggregator.oauth.server.provider: google is not supported by musterd yet")
}

// Every fault is reported, not only the first.
func TestEveryFaultIsReportedAtOnce(t *testing.T) {
	_, err := load(t, section(t, kv{"server.enabled", true}, kv{"server.sessionDuration", "0s"}, kv{"mcpClient.publicUrl", "http://example.com"}))
	require.Error(t, err)
	for _, want := range []string{
		"aggregator.oauth.server.baseUrl: required when aggregator.oauth.server.enabled is true",
		"aggregator.oauth.server.dex.issuerUrl: required",
		"aggregator.oauth.server.dex.clientId: required",
		"aggregator.oauth.server.sessionDuration: 0s is not a positive duration",
		"aggregator.oauth.mcpClient.publicUrl: \"http://example.com\" is not https",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// Options.Path starts every error's path; Validate's is DefaultPath.
func TestOptionsPathStartsTheErrorsPath(t *testing.T) {
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("server: {provider: okta}"), &n))
	_, err := config.Load(&n, config.Options{Path: "x.oauth"})
	assert.EqualError(t, err, `x.oauth.server.provider: "okta" is not a provider: dex or google`)
	cfg := config.Default()
	cfg.Server.Provider = "okta"
	assert.EqualError(t, cfg.Validate(), `aggregator.oauth.server.provider: "okta" is not a provider: dex or google`)
}
