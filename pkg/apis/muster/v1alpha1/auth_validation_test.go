package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// A remote server's spec.auth, good and bad, checked as a file and as an
// object read from an API server: muster's CRD rules (enums, patterns,
// required fields, CEL rules) and the requirements its field documentation
// states.

type obj = map[string]any

var (
	goodExchange = obj{"enabled": true, "dexTokenEndpoint": "https://dex.b.example.com/token", "connectorId": "cluster-a-dex"}
	goodIssuer   = obj{"issuer": "https://cf.mcp.example.com", "scopes": "openid offline_access"}
)

func with(m obj, kv ...any) obj {
	out := obj{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

var authCases = []struct {
	name string
	auth obj
	// want are the problems, as "field: message", in order; none for a
	// good block.
	want []string
}{
	// Good blocks.
	{name: "none", auth: obj{"type": "none"}},
	{name: "oauth alone", auth: obj{"type": "oauth"}},
	{name: "forwarded token with audiences", auth: obj{"type": "oauth", "forwardToken": true, "requiredAudiences": []any{"dex-k8s-authenticator"}}},
	{name: "forwarded token without a type, as muster's harness writes it", auth: obj{"forwardToken": true}},
	{name: "forwarded token and token exchange, the exchange preferred", auth: obj{"forwardToken": true, "tokenExchange": goodExchange}},
	{name: "token exchange in full", auth: obj{"type": "oauth", "tokenExchange": with(goodExchange,
		"expectedIssuer", "https://dex.b.internal", "scopes", "openid groups",
		"clientCredentialsSecretRef", obj{"name": "creds", "namespace": "muster", "clientIdKey": "id", "clientSecretKey": "secret"})}},
	{name: "disabled token exchange needs neither endpoint nor connector", auth: obj{"tokenExchange": obj{"enabled": false, "scopes": "openid"}}},
	{name: "authorization server with oauth", auth: obj{"type": "oauth", "authorizationServer": goodIssuer}},
	{name: "issuer with a port and a path", auth: obj{"type": "oauth", "authorizationServer": obj{"issuer": "https://login.example.com:8443/tenant/v2.0"}}},
	{name: "authorization server beside a forwardToken false and a disabled exchange", auth: obj{"type": "oauth", "forwardToken": false,
		"tokenExchange": obj{"enabled": false}, "authorizationServer": goodIssuer}},

	// Bad blocks.
	{name: "unknown type", auth: obj{"type": "basic"},
		want: []string{`spec.auth.type: unsupported value "basic": must be one of "oauth", "none"`}},
	{name: "authorization server with type none", auth: obj{"type": "none", "authorizationServer": goodIssuer},
		want: []string{"spec.auth.authorizationServer: only valid when type is oauth"}},
	{name: "authorization server without a type", auth: obj{"authorizationServer": goodIssuer},
		want: []string{"spec.auth.authorizationServer: only valid when type is oauth"}},
	{name: "authorization server with a forwarded token", auth: obj{"type": "oauth", "forwardToken": true, "authorizationServer": goodIssuer},
		want: []string{"spec.auth.authorizationServer: forwardToken bypasses per-backend OAuth; set one or the other, not both"}},
	{name: "authorization server with an enabled token exchange", auth: obj{"type": "oauth", "tokenExchange": goodExchange, "authorizationServer": goodIssuer},
		want: []string{"spec.auth.authorizationServer: tokenExchange has its own issuer/endpoint config; set one or the other, not both"}},
	{name: "authorization server without an issuer", auth: obj{"type": "oauth", "authorizationServer": obj{"scopes": "openid"}},
		want: []string{"spec.auth.authorizationServer.issuer: required"}},
	{name: "issuer over http", auth: obj{"type": "oauth", "authorizationServer": obj{"issuer": "http://auth.example.com"}},
		want: []string{`spec.auth.authorizationServer.issuer: "http://auth.example.com" does not match ^https://[^/?#]+(/[^?#]*[^/?#])?$`}},
	{name: "issuer with a trailing slash", auth: obj{"type": "oauth", "authorizationServer": obj{"issuer": "https://auth.example.com/"}},
		want: []string{`spec.auth.authorizationServer.issuer: "https://auth.example.com/" does not match ^https://[^/?#]+(/[^?#]*[^/?#])?$`}},
	{name: "issuer with a query", auth: obj{"type": "oauth", "authorizationServer": obj{"issuer": "https://auth.example.com?x=1"}},
		want: []string{`spec.auth.authorizationServer.issuer: "https://auth.example.com?x=1" does not match ^https://[^/?#]+(/[^?#]*[^/?#])?$`}},
	{name: "issuer with a fragment", auth: obj{"type": "oauth", "authorizationServer": obj{"issuer": "https://auth.example.com#f"}},
		want: []string{`spec.auth.authorizationServer.issuer: "https://auth.example.com#f" does not match ^https://[^/?#]+(/[^?#]*[^/?#])?$`}},
	{name: "enabled token exchange without an endpoint", auth: obj{"tokenExchange": obj{"enabled": true, "connectorId": "cluster-a-dex"}},
		want: []string{"spec.auth.tokenExchange.dexTokenEndpoint: required when enabled"}},
	{name: "enabled token exchange without a connector", auth: obj{"tokenExchange": obj{"enabled": true, "dexTokenEndpoint": "https://dex.b.example.com/token"}},
		want: []string{"spec.auth.tokenExchange.connectorId: required when enabled"}},
	{name: "token endpoint over http, even disabled", auth: obj{"tokenExchange": obj{"dexTokenEndpoint": "http://dex.b.example.com/token"}},
		want: []string{`spec.auth.tokenExchange.dexTokenEndpoint: "http://dex.b.example.com/token" does not match ^https://[^\s/$.?#].[^\s]*$`}},
	{name: "expected issuer that is no https URL", auth: obj{"tokenExchange": with(goodExchange, "expectedIssuer", "dex.b.internal")},
		want: []string{`spec.auth.tokenExchange.expectedIssuer: "dex.b.internal" does not match ^https://[^\s/$.?#].[^\s]*$`}},
	{name: "connector id starting with a digit", auth: obj{"tokenExchange": with(goodExchange, "connectorId", "1dex")},
		want: []string{`spec.auth.tokenExchange.connectorId: "1dex" does not match ^[a-zA-Z][a-zA-Z0-9_-]*$`}},
	{name: "secret ref without a name", auth: obj{"tokenExchange": with(goodExchange, "clientCredentialsSecretRef", obj{"namespace": "muster"})},
		want: []string{"spec.auth.tokenExchange.clientCredentialsSecretRef.name: required"}},
}

func remoteWithAuth(auth obj) obj {
	return obj{"apiVersion": APIVersion, "kind": KindMCPServer, "metadata": obj{"name": "api"},
		"spec": obj{"type": "streamable-http", "url": "https://api.example.com/mcp", "auth": auth}}
}

func TestAuthBlocksInAFile(t *testing.T) {
	for _, tc := range authCases {
		t.Run(tc.name, func(t *testing.T) {
			src, err := yaml.Marshal(remoteWithAuth(tc.auth))
			require.NoError(t, err)
			docs, err := DecodeFile("mcpservers/api.yaml", src)
			require.NoError(t, err)
			require.Len(t, docs, 1)
			d := docs[0]
			assert.Empty(t, d.Warnings)
			if len(tc.want) == 0 {
				assert.NoError(t, d.Err)
				return
			}
			var fes FieldErrors
			require.ErrorAs(t, d.Err, &fes, "%s", src)
			got := make([]string, len(fes))
			for i, fe := range fes {
				assert.Positive(t, fe.Line, "a file's error has its line")
				got[i] = fe.Field + ": " + fe.Msg
			}
			assert.Equal(t, tc.want, got, "%s", src)
		})
	}
}

func TestAuthBlocksOfACustomResource(t *testing.T) {
	for _, tc := range authCases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(remoteWithAuth(tc.auth))
			require.NoError(t, err)
			var s MCPServer
			require.NoError(t, json.Unmarshal(data, &s))
			s.Default() // as the API server stores it
			if len(tc.want) == 0 {
				assert.NoError(t, s.Validate().Err())
				return
			}
			assert.EqualError(t, s.Validate().Err(), strings.Join(tc.want, "\n"))
		})
	}
}

// muster's tools refuse a stdio server that authenticates; its loader and
// CRD accept one, and nothing authenticates to a child process. A file's
// is ignored with a warning, which a strict reader (declare, for the core
// tools) refuses.
func TestAStdioServersAuthIsIgnoredInAFileAndRefusedStrictly(t *testing.T) {
	for _, tc := range []struct {
		auth    string
		warning string
	}{
		{auth: "    type: oauth\n", warning: `mcpservers/git.yaml:9: spec.auth.type: "oauth" is only supported for remote server types (streamable-http or sse), ignored`},
		{auth: "    type: none\n"},
		{auth: "    forwardToken: true\n"},
		{auth: "    tokenExchange:\n      enabled: false\n"},
	} {
		t.Run(strings.TrimSpace(tc.auth), func(t *testing.T) {
			docs, err := DecodeFile("mcpservers/git.yaml", []byte(stdioServer+"  auth:\n"+tc.auth))
			require.NoError(t, err)
			require.Len(t, docs, 1)
			d := docs[0]
			require.NoError(t, d.Err, "the server is used")
			if tc.warning == "" {
				assert.Empty(t, d.Warnings)
				return
			}
			assert.Equal(t, []string{tc.warning}, d.Warnings.Strings())
			assert.Equal(t, []string{strings.TrimSuffix(tc.warning, ", ignored")}, d.Warnings.Refused().Strings())
			assert.Equal(t, FieldPath{{Name: "spec"}, {Name: "auth"}, {Name: "type"}}, d.Warnings[0].Path)
		})
	}

	// The warning is part of the document's hash: removing the setting
	// is a change.
	plain, err := DecodeFile("mcpservers/git.yaml", []byte(stdioServer))
	require.NoError(t, err)
	ignored, err := DecodeFile("mcpservers/git.yaml", []byte(stdioServer+"  auth:\n    type: oauth\n"))
	require.NoError(t, err)
	assert.NotEqual(t, plain[0].Hash, ignored[0].Hash, fmt.Sprint("hashes of ", plain[0].Hash))
}
