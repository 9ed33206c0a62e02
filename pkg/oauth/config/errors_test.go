package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/oauth/config"
)

// A value of the wrong kind under any key is an error naming the key's
// path: every leaf of the typed config is tried.
func TestAValueOfTheWrongKindNamesItsKey(t *testing.T) {
	leaves := leafKeys(reflect.TypeFor[config.Config](), "")
	require.Len(t, leaves, 65)
	for _, key := range leaves {
		// A list's entry is the first, a map's is "x".
		path := strings.ReplaceAll(strings.ReplaceAll(key, "[]", "[0]"), ".*", ".x")
		// A mapping is wrong for every leaf: none is a mapping of
		// mappings.
		bad := map[string]any{"a": map[string]any{"b": 1}}
		text := section(t, kv{path, bad})
		_, err := load(t, text)
		if assert.Error(t, err, text) {
			assert.True(t, strings.HasPrefix(err.Error(), "aggregator.oauth."+path), "%s: %v", path, err)
		}
	}
}

// Each bad value is refused, its error naming its path.
func TestEachBadValueNamesItsPath(t *testing.T) {
	with := func(kvs ...kv) []kv { return kvs }
	server := func(kvs ...kv) []kv { return append(enabledServer(), kvs...) }
	for _, c := range []struct {
		name string
		kvs  []kv
		want string
	}{
		// Kinds.
		{"bool", with(kv{"mcpClient.enabled", "maybe"}), `aggregator.oauth.mcpClient.enabled (line 2): want true or false, not "maybe"`},
		{"int", with(kv{"server.storage.valkey.db", "many"}), `aggregator.oauth.server.storage.valkey.db (line 4): want a whole number, not "many"`},
		{"list", with(kv{"server.trustedAudiences", "one"}), `aggregator.oauth.server.trustedAudiences (line 2): want a list, not "one"`},
		{"map", with(kv{"server.trustedIssuers[0].allowedClaims", "sub"}), `aggregator.oauth.server.trustedIssuers[0].allowedClaims (line 3): want a mapping, not "sub"`},
		{"struct", with(kv{"server.dex", "dex"}), `aggregator.oauth.server.dex (line 2): want a mapping, not "dex"`},
		{"secret", with(kv{"server.registrationToken", []any{"a"}}), `aggregator.oauth.server.registrationToken (line 3): want a string, not a list`},

		// URLs.
		{"publicUrl relative", with(kv{"mcpClient.publicUrl", "muster.example.com"}), `aggregator.oauth.mcpClient.publicUrl: "muster.example.com" is not an absolute URL`},
		{"publicUrl http", with(kv{"mcpClient.publicUrl", "http://muster.example.com"}), `aggregator.oauth.mcpClient.publicUrl: "http://muster.example.com" is not https: http is for a loopback host`},
		{"publicUrl ftp", with(kv{"mcpClient.publicUrl", "ftp://localhost"}), `aggregator.oauth.mcpClient.publicUrl: "ftp://localhost" is not an https URL`},
		{"publicUrl fragment", with(kv{"mcpClient.publicUrl", "https://muster.example.com/#x"}), `aggregator.oauth.mcpClient.publicUrl: "https://muster.example.com/#x" has a fragment`},
		{"baseUrl http", with(kv{"server.baseUrl", "http://10.0.0.1:8090"}), `aggregator.oauth.server.baseUrl: "http://10.0.0.1:8090" is not https`},
		{"baseUrl credentials", with(kv{"server.baseUrl", "https://user:hunter2@muster.example.com"}), `aggregator.oauth.server.baseUrl: "https://[redacted]@muster.example.com" holds credentials`},
		{"issuerUrl http", with(kv{"server.dex.issuerUrl", "http://dex.example.com"}), `aggregator.oauth.server.dex.issuerUrl: "http://dex.example.com" is not https`},
		{"issuerUrl opaque", with(kv{"server.dex.issuerUrl", "localhost:5556"}), `aggregator.oauth.server.dex.issuerUrl: "localhost:5556" is not an absolute URL`},
		{"clientId", with(kv{"mcpClient.clientId", "http://example.com/cimd.json"}), `aggregator.oauth.mcpClient.clientId: "http://example.com/cimd.json" is not https`},
		{"resourceIdentifier", with(kv{"server.resourceIdentifier", "muster"}), `aggregator.oauth.server.resourceIdentifier: "muster" is not an absolute URL`},
		{"jwksUrl", with(kv{"server.trustedIssuers[0].issuer", "i"}, kv{"server.trustedIssuers[0].jwksUrl", "http://issuer.example.com/keys"}), `aggregator.oauth.server.trustedIssuers[0].jwksUrl: "http://issuer.example.com/keys" is not https`},
		{"redirect URI", with(kv{"server.trustedPublicRegistrationRedirectURIs", []any{"http://claude.ai/cb"}}), `aggregator.oauth.server.trustedPublicRegistrationRedirectURIs[0]: "http://claude.ai/cb" is not https`},
		{"dexTokenEndpoint", server(kv{"server.trustedIssuers[0].issuer", "i"}, kv{"server.trustedIssuers[0].jwksUrl", "https://i/keys"},
			kv{"server.tokenExchangeBroker.targets.a.dexTokenEndpoint", "http://dex.a.example.com/token"}, kv{"server.tokenExchangeBroker.targets.a.connectorId", "c"}),
			`aggregator.oauth.server.tokenExchangeBroker.targets.a.dexTokenEndpoint: "http://dex.a.example.com/token" is not https`},
		{"allowlist", with(kv{"mcpClient.postLoginRedirectAllowlist", []any{"javascript:alert(1)"}}), `aggregator.oauth.mcpClient.postLoginRedirectAllowlist[0]: "javascript:alert(1)" is not an absolute http(s) URL prefix`},
		{"origin", with(kv{"server.allowedOrigins", "https://a.example.com,https://b.example.com/path"}), `aggregator.oauth.server.allowedOrigins[1]: "https://b.example.com/path" is not an origin`},

		// Paths.
		{"callbackPath", with(kv{"mcpClient.callbackPath", "callback"}), `aggregator.oauth.mcpClient.callbackPath: "callback" is not a path`},
		{"callbackPath server's", with(kv{"mcpClient.callbackPath", "/oauth/callback"}), `aggregator.oauth.mcpClient.callbackPath: /oauth/callback is the server role's callback`},
		{"cimd.path", with(kv{"mcpClient.cimd.path", "cimd.json"}), `aggregator.oauth.mcpClient.cimd.path: "cimd.json" is not a path`},

		// What an enabled role needs.
		{"publicUrl required", with(kv{"mcpClient.enabled", true}), `aggregator.oauth.mcpClient.publicUrl: required when aggregator.oauth.mcpClient.enabled is true`},
		{"baseUrl required", server(kv{"server.baseUrl", ""}), `aggregator.oauth.server.baseUrl: required when aggregator.oauth.server.enabled is true`},
		{"issuerUrl required", server(kv{"server.dex.issuerUrl", ""}), `aggregator.oauth.server.dex.issuerUrl: required when`},
		{"dex clientId required", server(kv{"server.dex.clientId", ""}), `aggregator.oauth.server.dex.clientId: required when`},
		{"broker needs issuers", server(kv{"server.tokenExchangeBroker.targets.a.dexTokenEndpoint", "https://dex.a/token"}, kv{"server.tokenExchangeBroker.targets.a.connectorId", "c"}),
			`aggregator.oauth.server.tokenExchangeBroker: has targets but trustedIssuers is empty`},

		// Choices.
		{"provider", with(kv{"server.provider", "okta"}), `aggregator.oauth.server.provider: "okta" is not a provider: dex or google`},
		{"google enabled", server(kv{"server.provider", "google"}), `aggregator.oauth.server.provider: google is not supported by musterd yet`},
		{"storage type", with(kv{"server.storage.type", "disk"}), `aggregator.oauth.server.storage.type: "disk" is not a storage type: memory or valkey`},

		// Storage.
		{"valkey url", with(kv{"server.storage.type", "valkey"}), `aggregator.oauth.server.storage.valkey.url: required when storage.type is valkey`},
		{"valkey url credentials", with(kv{"server.storage.valkey.url", "redis://:hunter2@valkey:6379"}), `aggregator.oauth.server.storage.valkey.url: "redis://[redacted]@valkey:6379" holds credentials`},
		{"valkey db", with(kv{"server.storage.valkey.db", -1}), `aggregator.oauth.server.storage.valkey.db: -1 is not a database number`},
		{"valkey tls name", with(kv{"server.storage.valkey.tlsServerName", "v"}), `aggregator.oauth.server.storage.valkey.tlsServerName: set without tlsEnabled: true`},

		// Secrets, durations, lists.
		{"encryptionKey base64", with(kv{"server.encryptionKey", "not base64!"}), `aggregator.oauth.server.encryptionKey: is not base64`},
		{"encryptionKey size", with(kv{"server.encryptionKey", "AAAA"}), `aggregator.oauth.server.encryptionKey: decodes to 3 bytes, not 32`},
		{"sessionDuration days", with(kv{"server.sessionDuration", "30d"}), `aggregator.oauth.server.sessionDuration (line 2): "30d" is not a duration such as 720h or 30m`},
		{"sessionDuration number", with(kv{"server.sessionDuration", 3600}), `aggregator.oauth.server.sessionDuration (line 2): "3600" is not a duration`},
		{"sessionDuration zero", with(kv{"server.sessionDuration", "0s"}), `aggregator.oauth.server.sessionDuration: 0s is not a positive duration`},
		{"cidr", with(kv{"server.trustedProxyCIDRs", []any{"10.0.0.0/8", "10.0.0.1"}}), `aggregator.oauth.server.trustedProxyCIDRs[1] (line 4): netip.ParsePrefix("10.0.0.1"): no '/'`},
		{"scheme", with(kv{"server.trustedPublicRegistrationSchemes", []any{"https"}}), `aggregator.oauth.server.trustedPublicRegistrationSchemes[0]: https would let any web redirect register`},
		{"scheme syntax", with(kv{"server.trustedPublicRegistrationSchemes", []any{"1x"}}), `aggregator.oauth.server.trustedPublicRegistrationSchemes[0]: "1x" is not a URI scheme`},
		{"audience", with(kv{"server.trustedAudiences", []any{"a", " "}}), `aggregator.oauth.server.trustedAudiences[1]: is empty`},
		{"issuer", with(kv{"server.trustedIssuers[0].jwksUrl", "https://i/keys"}), `aggregator.oauth.server.trustedIssuers[0].issuer: required`},
		{"jwksUrl required", with(kv{"server.trustedIssuers[0].issuer", "https://i"}), `aggregator.oauth.server.trustedIssuers[0].jwksUrl: required`},
		{"target endpoint", with(kv{"server.tokenExchangeBroker.targets.a.connectorId", "c"}), `aggregator.oauth.server.tokenExchangeBroker.targets.a.dexTokenEndpoint: required`},
		{"target connector", with(kv{"server.tokenExchangeBroker.targets.a.dexTokenEndpoint", "https://dex.a/token"}), `aggregator.oauth.server.tokenExchangeBroker.targets.a.connectorId: required`},
		{"target secret ref", with(kv{"server.tokenExchangeBroker.targets.a.dexTokenEndpoint", "https://dex.a/token"}, kv{"server.tokenExchangeBroker.targets.a.connectorId", "c"},
			kv{"server.tokenExchangeBroker.targets.a.clientCredentialsSecretRef.namespace", "ns"}), `aggregator.oauth.server.tokenExchangeBroker.targets.a.clientCredentialsSecretRef.name: required`},
		{"broker client secret ref", with(kv{"server.tokenExchangeBroker.brokerClients.b.clientCredentialsSecretRef.namespace", "ns"}),
			`aggregator.oauth.server.tokenExchangeBroker.brokerClients.b.clientCredentialsSecretRef.name: required`},

		// Unknown keys: the one meant, where one is close.
		{"top", with(kv{"sever.enabled", true}), `aggregator.oauth.sever (line 1): unknown key; did you mean server?`},
		{"case", with(kv{"mcpClient.publicURL", "https://m"}), `aggregator.oauth.mcpClient.publicURL (line 2): unknown key; did you mean publicUrl?`},
		{"typo", with(kv{"server.dex.clientSecrt", "s"}), `aggregator.oauth.server.dex.clientSecrt (line 3): unknown key; did you mean clientSecret?`},
		{"deep", with(kv{"server.storage.valkey.tlsenabled", true}), `aggregator.oauth.server.storage.valkey.tlsenabled (line 4): unknown key; did you mean tlsEnabled?`},
		{"in a list", with(kv{"server.trustedIssuers[0].jwksURL", "https://i/keys"}), `aggregator.oauth.server.trustedIssuers[0].jwksURL (line 3): unknown key; did you mean jwksUrl?`},
		{"in a map", with(kv{"server.tokenExchangeBroker.targets.a.conectorId", "c"}), `aggregator.oauth.server.tokenExchangeBroker.targets.a.conectorId (line 5): unknown key; did you mean connectorId?`},
		{"far", with(kv{"server.frobnicate", true}), `aggregator.oauth.server.frobnicate (line 2): unknown key; the keys of aggregator.oauth.server are enabled, baseUrl, provider, dex,`},
		{"muster's ExtraCAFile is not a key", with(kv{"server.extraCAFile", "/ca.pem"}), `aggregator.oauth.server.extraCAFile (line 2): unknown key`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := section(t, c.kvs...)
			_, err := load(t, text)
			require.Error(t, err, text)
			assert.Contains(t, err.Error(), c.want, text)
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

// A key given twice is refused, not settled by order.
func TestAKeyGivenTwiceIsAnError(t *testing.T) {
	_, err := load(t, "server:\n  enabled: false\n  enabled: true\n")
	assert.ErrorContains(t, err, "aggregator.oauth.server.enabled (line 3): given twice")
	_, err = load(t, "server:\n  tokenExchangeBroker:\n    targets:\n      a: {}\n      a: {}\n")
	assert.ErrorContains(t, err, "aggregator.oauth.server.tokenExchangeBroker.targets.a (line 5): given twice")
}

// YAML 1.1's booleans read as muster's yaml.v3 reads them; anchors too.
func TestBooleansAndAnchorsReadAsYAMLv3ReadsThem(t *testing.T) {
	cfg, err := load(t, "mcpClient: {enabled: yes, publicUrl: &u 'https://m.example.com'}\nserver: {enableCIMD: off, baseUrl: *u}\n")
	require.NoError(t, err)
	assert.True(t, cfg.MCPClient.Enabled)
	assert.False(t, cfg.Server.EnableCIMD)
	assert.Equal(t, "https://m.example.com", cfg.Server.BaseURL)
}

// The good values beside the bad: loopback http, the same in each form.
func TestLoopbackHostsMayUseHTTP(t *testing.T) {
	for _, u := range []string{"http://localhost:8090", "http://LOCALHOST", "http://127.0.0.1:1", "http://127.9.9.9", "http://[::1]:8090", "https://example.com"} {
		_, err := load(t, section(t, kv{"mcpClient.publicUrl", u}, kv{"server.baseUrl", u}, kv{"server.dex.issuerUrl", u}))
		assert.NoError(t, err, u)
	}
}

// Merge keys read as yaml.v3 reads them: the mapping's own keys win, and
// of a list of mappings the earlier; an unknown key merged in is still an
// error.
func TestMergeKeysReadAsYAMLv3ReadsThem(t *testing.T) {
	text := `
mcpClient: {publicUrl: &u "https://m.example.com"}
server:
  <<: [{baseUrl: *u, provider: google}, {baseUrl: "https://other.example.com", storage: {type: valkey, valkey: {url: "v:6379"}}}]
  provider: dex
  tokenExchangeBroker:
    targets:
      <<: {a: &t {dexTokenEndpoint: "https://dex.a/token", connectorId: c}}
      b: {<<: *t, connectorId: d}
`
	cfg, err := load(t, text)
	require.NoError(t, err)
	assert.Equal(t, "https://m.example.com", cfg.Server.BaseURL, "the earlier mapping of the list wins")
	assert.Equal(t, "dex", cfg.Server.Provider, "the mapping's own key wins")
	assert.Equal(t, "valkey", cfg.Server.Storage.Type)
	assert.Equal(t, "c", cfg.Server.TokenExchangeBroker.Targets["a"].ConnectorID)
	assert.Equal(t, config.BrokerTarget{DexTokenEndpoint: "https://dex.a/token", ConnectorID: "d"}, cfg.Server.TokenExchangeBroker.Targets["b"])

	_, err = load(t, "server: {<<: {baseURL: x}}\n")
	assert.ErrorContains(t, err, "aggregator.oauth.server.baseURL (line 1): unknown key; did you mean baseUrl?")
}

// An empty list is kept apart from an absent one: muster reads a nil
// allowedScopes as no cap, an empty one as no scope.
func TestAnEmptyListIsNotAnAbsentOne(t *testing.T) {
	cfg, err := load(t, "server: {trustedIssuers: [{issuer: i, jwksUrl: 'https://i/keys', allowedScopes: []}, {issuer: j, jwksUrl: 'https://j/keys'}]}\n")
	require.NoError(t, err)
	assert.NotNil(t, cfg.Server.TrustedIssuers[0].AllowedScopes)
	assert.Empty(t, cfg.Server.TrustedIssuers[0].AllowedScopes)
	assert.Nil(t, cfg.Server.TrustedIssuers[1].AllowedScopes)
}
