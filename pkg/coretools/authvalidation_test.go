package coretools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// spec.auth through core_mcpserver_validate, _create and _update: checked
// as a file is (package v1alpha1 holds the rules), refused with the field
// named, and nothing written.

func remoteArgs(name string, auth map[string]any) map[string]any {
	m := map[string]any{"name": name, "type": "streamable-http", "url": "https://mcp.example.com/v1/mcp", "timeout": float64(30)}
	if auth != nil {
		m["auth"] = auth
	}
	return m
}

var (
	exchange = map[string]any{"enabled": true, "dexTokenEndpoint": "https://dex.b.example.com/token", "connectorId": "cluster-a-dex",
		"clientCredentialsSecretRef": map[string]any{"name": "creds"}}
	issuer = map[string]any{"issuer": "https://cf.mcp.example.com", "scopes": "openid offline_access"}
)

func TestGoodAuthBlocksAreAcceptedByTheTools(t *testing.T) {
	h := newHarness(t)
	for i, auth := range []map[string]any{
		{"type": "none"},
		{"type": "oauth", "forwardToken": true, "requiredAudiences": []any{"dex-k8s-authenticator"}},
		{"forwardToken": true, "tokenExchange": exchange},
		{"type": "oauth", "authorizationServer": issuer},
	} {
		args := remoteArgs("good", auth)
		msg, isErr := h.call(t, "core_mcpserver_validate", args)
		assert.False(t, isErr, "%d: %s", i, msg)
		msg, isErr = h.call(t, "core_mcpserver_create", args)
		require.False(t, isErr, "%d: %s", i, msg)
		msg, isErr = h.call(t, "core_mcpserver_delete", map[string]any{"name": "good"})
		require.False(t, isErr, "%d: %s", i, msg)
	}
}

func TestBadAuthBlocksAreRefusedNamingTheField(t *testing.T) {
	h := newHarness(t)
	_, isErr := h.call(t, "core_mcpserver_create", remoteArgs("api", map[string]any{"type": "oauth"}))
	require.False(t, isErr)
	before := snapshot(t, h.dir)
	for _, tc := range []struct {
		name string
		auth map[string]any
		want string // the field and the start of its message
	}{
		{"unknown type", map[string]any{"type": "basic"}, `spec.auth.type: unsupported value "basic"`},
		{"authorization server without oauth", map[string]any{"authorizationServer": issuer}, "spec.auth.authorizationServer: only valid when type is oauth"},
		{"authorization server and forwarded token", map[string]any{"type": "oauth", "forwardToken": true, "authorizationServer": issuer},
			"spec.auth.authorizationServer: forwardToken bypasses per-backend OAuth"},
		{"authorization server and token exchange", map[string]any{"type": "oauth", "tokenExchange": exchange, "authorizationServer": issuer},
			"spec.auth.authorizationServer: tokenExchange has its own issuer/endpoint config"},
		{"authorization server without issuer", map[string]any{"type": "oauth", "authorizationServer": map[string]any{"scopes": "openid"}},
			"spec.auth.authorizationServer.issuer: required"},
		{"issuer over http", map[string]any{"type": "oauth", "authorizationServer": map[string]any{"issuer": "http://auth.example.com"}},
			`spec.auth.authorizationServer.issuer: "http://auth.example.com" does not match`},
		{"exchange without endpoint", map[string]any{"tokenExchange": map[string]any{"enabled": true, "connectorId": "c"}},
			"spec.auth.tokenExchange.dexTokenEndpoint: required when enabled"},
		{"exchange without connector", map[string]any{"tokenExchange": map[string]any{"enabled": true, "dexTokenEndpoint": "https://dex.example.com/token"}},
			"spec.auth.tokenExchange.connectorId: required when enabled"},
		{"endpoint over http", map[string]any{"tokenExchange": map[string]any{"dexTokenEndpoint": "http://dex.example.com/token"}},
			`spec.auth.tokenExchange.dexTokenEndpoint: "http://dex.example.com/token" does not match`},
		{"secret ref without name", map[string]any{"tokenExchange": map[string]any{"clientCredentialsSecretRef": map[string]any{"namespace": "x"}}},
			"spec.auth.tokenExchange.clientCredentialsSecretRef.name: required"},
		{"unknown field", map[string]any{"type": "oauth", "tokenExchange": map[string]any{"connector": "c"}},
			"spec.auth.tokenExchange.connector: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []struct{ tool, name, prefix string }{
				{"core_mcpserver_validate", "other", "Validation failed: "},
				{"core_mcpserver_create", "other", "Invalid MCP server definition: "},
				{"core_mcpserver_update", "api", "Invalid MCP server definition: "},
			} {
				msg, isErr := h.call(t, call.tool, remoteArgs(call.name, tc.auth))
				assert.True(t, isErr, "%s: %s", call.tool, msg)
				assert.True(t, strings.HasPrefix(msg, call.prefix+tc.want), "%s: %q\nwant prefix %q", call.tool, msg, call.prefix+tc.want)
			}
			assert.Equal(t, before, snapshot(t, h.dir), "nothing is written")
		})
	}
}

// muster's tools refuse a stdio server whose auth type is other than
// none, judged on the definition a create or an update would write.
func TestAStdioServerThatAuthenticatesIsRefused(t *testing.T) {
	h := newHarness(t)
	const want = `spec.auth.type: "oauth" is only supported for remote server types (streamable-http or sse)`
	stdio := func(auth map[string]any) map[string]any {
		return map[string]any{"name": "git", "type": "stdio", "command": "mcp-git", "auth": auth}
	}
	msg, isErr := h.call(t, "core_mcpserver_validate", stdio(map[string]any{"type": "oauth"}))
	assert.True(t, isErr)
	assert.Equal(t, "Validation failed: "+want, msg)
	msg, isErr = h.call(t, "core_mcpserver_create", stdio(map[string]any{"type": "oauth"}))
	assert.True(t, isErr)
	assert.Equal(t, "Invalid MCP server definition: "+want, msg)

	msg, isErr = h.call(t, "core_mcpserver_create", stdio(map[string]any{"type": "none"}))
	require.False(t, isErr, "type none is no authentication: %s", msg)
	msg, isErr = h.call(t, "core_mcpserver_update", map[string]any{"name": "git", "auth": map[string]any{"type": "oauth"}})
	assert.True(t, isErr)
	assert.Equal(t, "Invalid MCP server definition: "+want, msg)

	// A remote server that authenticates, made stdio by an update.
	_, isErr = h.call(t, "core_mcpserver_create", remoteArgs("api", map[string]any{"type": "oauth"}))
	require.False(t, isErr)
	msg, isErr = h.call(t, "core_mcpserver_update", map[string]any{"name": "api", "type": "stdio", "command": "mcp-api", "url": nil})
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(msg, "Invalid MCP server definition: "), msg)
	assert.Contains(t, msg, want)
}

// An issuer with a trailing slash is written without it, as muster's tools
// write it; the caller's arguments are not changed.
func TestAnIssuersTrailingSlashIsDropped(t *testing.T) {
	h := newHarness(t)
	as := map[string]any{"issuer": "https://cf.mcp.example.com/"}
	args := remoteArgs("atlassian", map[string]any{"type": "oauth", "authorizationServer": as})
	msg, isErr := h.call(t, "core_mcpserver_validate", args)
	assert.False(t, isErr, msg)
	msg, isErr = h.call(t, "core_mcpserver_create", args)
	require.False(t, isErr, msg)
	assert.Equal(t, "https://cf.mcp.example.com/", as["issuer"], "the caller's arguments are theirs")
	e, ok := h.index.Get(events.NewKey(v1alpha1.KindMCPServer, "", "atlassian"))
	require.True(t, ok)
	assert.Equal(t, "https://cf.mcp.example.com", e.Object.(*v1alpha1.MCPServer).Spec.Auth.AuthorizationServer.Issuer)
	data, err := os.ReadFile(filepath.Join(h.dir, "mcpservers", "atlassian.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "issuer: https://cf.mcp.example.com\n")

	msg, isErr = h.call(t, "core_mcpserver_update", map[string]any{"name": "atlassian",
		"auth": map[string]any{"type": "oauth", "authorizationServer": map[string]any{"issuer": "https://other.example.com/tenant/"}}})
	require.False(t, isErr, msg)
	e, _ = h.index.Get(events.NewKey(v1alpha1.KindMCPServer, "", "atlassian"))
	assert.Equal(t, "https://other.example.com/tenant", e.Object.(*v1alpha1.MCPServer).Spec.Auth.AuthorizationServer.Issuer)
}
