package main

// End to end: an MCP server's spec.auth through the real daemon. The core
// tools advertise its whole schema through describe_tool, as muster does;
// a bad auth block is refused naming its field, through call_tool; a good
// one is written and read back; and a hand-written stdio server that
// authenticates runs, with a warning that names the setting ignored.

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestE2EMCPServerAuthSchemaAndValidation(t *testing.T) {
	e := startFS(t)
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)

	// describe_tool shows the auth argument to its deepest field.
	for _, tool := range []string{"core_mcpserver_create", "core_mcpserver_update", "core_mcpserver_validate"} {
		out, isErr := callTool(t, cs, "describe_tool", map[string]any{"name": tool})
		require.False(t, isErr, out)
		var described struct {
			InputSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &described), out)
		type prop struct {
			Type       string          `json:"type"`
			Enum       []string        `json:"enum"`
			Required   []string        `json:"required"`
			Properties map[string]prop `json:"properties"`
		}
		var auth prop
		require.NoError(t, json.Unmarshal(described.InputSchema.Properties["auth"], &auth), out)
		assert.Equal(t, "object", auth.Type, tool)
		assert.Equal(t, []string{"oauth", "none"}, auth.Properties["type"].Enum, tool)
		te := auth.Properties["tokenExchange"]
		for _, f := range []string{"enabled", "dexTokenEndpoint", "expectedIssuer", "connectorId", "scopes", "clientCredentialsSecretRef"} {
			assert.Contains(t, te.Properties, f, tool)
		}
		ref := te.Properties["clientCredentialsSecretRef"]
		assert.Equal(t, []string{"name"}, ref.Required, tool)
		assert.Len(t, ref.Properties, 4, tool)
		as := auth.Properties["authorizationServer"]
		assert.Equal(t, []string{"issuer"}, as.Required, tool)
		assert.Contains(t, as.Properties, "issuer", tool)
	}

	remote := func(auth map[string]any) map[string]any {
		return map[string]any{"name": "atlassian", "type": "streamable-http", "url": "https://mcp.example.com/v1/mcp", "auth": auth}
	}
	issuer := map[string]any{"issuer": "https://cf.mcp.example.com/", "scopes": "openid offline_access"}

	// A bad block is refused, naming its field; nothing is written.
	out, isErr := musterCall(t, cs, "core_mcpserver_create", remote(map[string]any{"type": "none", "authorizationServer": issuer}))
	assert.True(t, isErr, out)
	assert.Equal(t, "Invalid MCP server definition: spec.auth.authorizationServer: only valid when type is oauth", out)
	out, isErr = musterCall(t, cs, "core_mcpserver_validate", remote(map[string]any{"tokenExchange": map[string]any{"enabled": true, "connectorId": "dex"}}))
	assert.True(t, isErr, out)
	assert.Equal(t, "Validation failed: spec.auth.tokenExchange.dexTokenEndpoint: required when enabled", out)
	_, ok := e.server(t, "atlassian")
	assert.False(t, ok, "nothing refused is written")

	// A good one is written, its issuer without the trailing slash.
	out, isErr = musterCall(t, cs, "core_mcpserver_create", remote(map[string]any{"type": "oauth", "authorizationServer": issuer}))
	require.False(t, isErr, out)
	out, isErr = musterCall(t, cs, "core_mcpserver_get", map[string]any{"name": "atlassian"})
	require.False(t, isErr, out)
	assert.Contains(t, out, `"authorizationServer":{"issuer":"https://cf.mcp.example.com","scopes":"openid offline_access"}`)

	// A stdio server that authenticates: refused by the tools, as muster's
	// refuse it; in a file, used, with the setting ignored and named.
	out, isErr = musterCall(t, cs, "core_mcpserver_create", map[string]any{"name": "echo", "type": "stdio", "command": fakeServer(), "auth": map[string]any{"type": "oauth"}})
	assert.True(t, isErr, out)
	assert.Equal(t, `Invalid MCP server definition: spec.auth.type: "oauth" is only supported for remote server types (streamable-http or sse)`, out)
	marker := newMarker()
	e.write(t, "mcpservers/echo.yaml", mcpServerYAML("echo", append(stdioSpec("-tools", marker), "auth:", "  type: oauth")...))
	s := e.waitServer(t, "echo", "is Running", running("x_echo_"+marker))
	assert.Equal(t, []string{`mcpservers/echo.yaml:11: spec.auth.type: "oauth" is only supported for remote server types (streamable-http or sse), ignored`}, s.Status.Warnings)

	// A hand-written file with a bad auth block: its status says what is
	// wrong, in full.
	e.write(t, "mcpservers/override.yaml", mcpServerYAML("override", "type: streamable-http", "url: https://mcp.example.com/v1/mcp",
		"auth:", "  authorizationServer:", "    issuer: https://cf.mcp.example.com"))
	bad := e.waitServer(t, "override", "is refused", func(s serverObject) bool { return s.Reconcile.LastError != "" })
	assert.Equal(t, "mcpservers/override.yaml:9: spec.auth.authorizationServer: only valid when type is oauth", bad.Reconcile.LastError)
}
