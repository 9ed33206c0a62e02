package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
)

// Against a real Dex and a forwarding server of bin/mcp-fake's that
// trusts it, musterd's OAuth as muster's harness meets it:
//   - a user's first request waits for their connections to the servers
//     that forward their token, so that the tools they list at once
//     include those servers' (muster bootstraps a new session's SSO before
//     serving it);
//   - a token that is no JWT is the provider's to judge, at its userinfo
//     endpoint: Dex refuses one it never issued, and musterd answers with
//     the usual challenge, saying so, never echoing the token;
//   - core_mcpserver_create stamps the creating user's subject, shown as
//     registeredBy, and kept by another user's update;
//   - the server is Connected to a user whose own connection is up, and
//     Auth Required to a caller with none (the static token's), as
//     musterd holds no credential for it.
func TestE2EProviderTokensAsMustersHarnessPresentsThem(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami",
		"-authorization-server", dex.Issuer, "-audience", dextest.ClientMusterd, "-ca-file", dex.CAFile)
	addr := freeAddr(t)
	base := "http://" + addr
	e := preparedEnv(t, map[string]string{
		"config.yaml": oauthConfig(base, dex.Issuer),
		"mcpservers/sso.yaml": mcpServerYAML("sso", "type: streamable-http",
			"autoStart: true", "url: "+yamlValue(url), "timeout: 10", "auth: {forwardToken: true}"),
	})
	const static = "static-api-t0ken"
	e.start(t, "-listen", addr, "-extra-ca-file", dex.CAFile, "-log-level", "debug", "-api-token", static)
	e.waitServer(t, "sso", "asks for authorization", func(s serverObject) bool { return s.Status.State == "Auth Required" })

	alice := idTokenOf(t, dex, dextest.ClientMusterd, "alice")
	bob := idTokenOf(t, dex, dextest.ClientMusterd, "bob")
	asAlice := connectMCP(t, base+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{alice}}})
	assert.Contains(t, metaToolNames(t, asAlice), "x_sso_whoami", "alice's first request waited for her forwarding server")

	const opaque = "opaque-access-token-dex-never-issued"
	code, challenge := post(t, base+"/mcp", opaque, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.True(t, strings.HasPrefix(challenge, `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource"`), challenge)
	assert.Contains(t, challenge, `error="invalid_token"`)
	assert.Contains(t, challenge, "refused by the userinfo endpoint of "+dex.Issuer)

	out, isErr := musterCall(t, asAlice, "core_mcpserver_create", map[string]any{"name": "stamped", "type": "stdio", "command": "echo", "args": []any{"stamped"}})
	require.False(t, isErr, out)
	registeredBy := func() string {
		out, isErr := musterCall(t, asAlice, "core_mcpserver_get", map[string]any{"name": "stamped"})
		require.False(t, isErr, out)
		var info struct {
			RegisteredBy string `json:"registeredBy"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &info), out)
		return info.RegisteredBy
	}
	assert.Equal(t, claimsOf(t, alice)["sub"], registeredBy())
	asBob := connectMCP(t, base+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{bob}}})
	out, isErr = musterCall(t, asBob, "core_mcpserver_update", map[string]any{"name": "stamped", "description": "bob's words"})
	require.False(t, isErr, out)
	assert.Equal(t, claimsOf(t, alice)["sub"], registeredBy(), "an update keeps who registered it")
	assert.True(t, slices.Contains(metaToolNames(t, asBob), "x_sso_whoami"), "bob's first request waited too")

	asStatic := connectMCP(t, base+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{static}}})
	state := func(cs *mcp.ClientSession) string {
		out, isErr := musterCall(t, cs, "core_mcpserver_get", map[string]any{"name": "sso"})
		require.False(t, isErr, out)
		var got struct{ State string }
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		return got.State
	}
	assert.Equal(t, "Connected", state(asAlice), "to alice, whose own connection is up")
	assert.Equal(t, "Auth Required", state(asStatic), "to a caller with none, as musterd holds no credential")

	log := e.stderr.String()
	for _, token := range []string{alice, bob, opaque, static} {
		assert.NotContains(t, log, token, "a token in musterd's log")
	}
}
