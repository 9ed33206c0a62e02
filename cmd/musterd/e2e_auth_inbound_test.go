package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
)

// freeAddr is a loopback address nothing listens on now, for a daemon
// whose own URL its configuration must name before it starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// With aggregator.oauth.server enabled, musterd takes the tokens its
// provider (a real Dex) issued for it, and only those: no token, one for
// another audience, one from an issuer it does not trust, and one signed
// by another key in the provider's name are refused at the MCP endpoint
// and at the API, each with a challenge naming musterd's protected-
// resource metadata, which it serves; the static API token keeps working
// beside them. A good token's user owns the
// session: another user cannot ride it. No token reaches the log.
func TestE2EOnlyTheProvidersTokensForMusterdAreLetIn(t *testing.T) {
	trusted := dextest.Start(t, dextest.Options{TLS: true})
	untrusted := dextest.Start(t, dextest.Options{TLS: true})
	cas := filepath.Join(t.TempDir(), "cas.pem")
	require.NoError(t, os.WriteFile(cas, append(readFile(t, trusted.CAFile), readFile(t, untrusted.CAFile)...), 0o600))
	addr := freeAddr(t)
	base := "http://" + addr
	e := preparedEnv(t, map[string]string{
		"config.yaml": oauthConfig(base, trusted.Issuer, "      provider: dex\n"),
	})
	const static = "static-api-t0ken"
	e.start(t, "-listen", addr, "-extra-ca-file", cas, "-log-level", "debug", "-api-token", static)

	resp, err := http.Get(base + "/.well-known/oauth-protected-resource")
	require.NoError(t, err)
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&prm))
	resp.Body.Close()
	assert.Equal(t, base, prm.Resource)
	assert.Equal(t, []string{base}, prm.AuthorizationServers, "musterd is the authorization server, its provider upstream")

	alice := idTokenOf(t, trusted, dextest.ClientMusterd, "alice")
	bob := idTokenOf(t, trusted, dextest.ClientMusterd, "bob")
	refused := map[string]string{
		"no token":            "",
		"another audience":    idTokenOf(t, trusted, dextest.ClientOther, "alice"),
		"an untrusted issuer": idTokenOf(t, untrusted, dextest.ClientMusterd, "alice"),
		"another key":         forgeLike(t, alice),
	}
	for why, token := range refused {
		code, challenge := post(t, base+"/mcp/direct", token, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		assert.Equal(t, http.StatusUnauthorized, code, why)
		assert.True(t, strings.HasPrefix(challenge, `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource"`), "%s: %s", why, challenge)
		code, _ = post(t, base+"/api/v1/resources/mcpservers/default/nothing/reconcile", token, "")
		assert.Equal(t, http.StatusUnauthorized, code, "%s, at the API", why)
	}
	code, _ := post(t, base+"/api/v1/resources/mcpservers/default/nothing/reconcile", alice, "")
	assert.NotEqual(t, http.StatusUnauthorized, code, "alice's token opens the API")
	code, _ = post(t, base+"/api/v1/resources/mcpservers/default/nothing/reconcile", static, "")
	assert.NotEqual(t, http.StatusUnauthorized, code, "the static token still opens the API beside OAuth")

	cs := connectMCP(t, base+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{alice}}})
	out, isErr := callTool(t, cs, "list_tools", nil)
	require.False(t, isErr, out)

	// Bob, on alice's session.
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bob)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))

	log := e.stderr.String()
	for _, token := range append([]string{alice, bob, static}, refused["another audience"], refused["an untrusted issuer"], refused["another key"]) {
		assert.NotContains(t, log, token, "a token in musterd's log")
	}
}

// oauthConfig is a config.yaml whose aggregator.oauth.server is musterd's
// authorization server at base, Dex at issuer upstream (its static client
// musterd, secret musterd-secret), with more lines of that section (each
// whole, newline and all; a line indented less ends the section).
func oauthConfig(base, issuer string, more ...string) string {
	return fmt.Sprintf(`aggregator:
  oauth:
    server:
      enabled: true
      baseUrl: %s
      dex: {issuerUrl: %s, clientId: %s, clientSecret: musterd-secret}
`, base, issuer, dextest.ClientMusterd) + strings.Join(more, "")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// idTokenOf is the ID token Dex issues client for user's password.
func idTokenOf(t *testing.T, d *dextest.Dex, client, user string) string {
	t.Helper()
	raw, _ := d.PasswordToken(t, client, user).Extra("id_token").(string)
	require.NotEmpty(t, raw)
	return raw
}

// forgeLike signs token's claims anew with a key of its own, keeping
// what the token says of itself (issuer, audience, user, expiry).
func forgeLike(t *testing.T, token string) string {
	t.Helper()
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, json.Unmarshal(payload, &claims))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "forged"}}, nil)
	require.NoError(t, err)
	forged, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return forged
}

// post sends body with token (none if empty), and returns the status and
// the WWW-Authenticate challenge.
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// A server that forwards the user's token (spec.auth.forwardToken) is
// each user's at once, with no login: each user who comes with a token
// of the provider gets a connection of their own carrying that token, and
// calls it as themself; a logout through core_auth_logout is refused, as
// muster refuses it.
func TestE2EAForwardingServerIsEachUsersWithTheirOwnToken(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami",
		"-authorization-server", dex.Issuer, "-audience", dextest.ClientMusterd, "-ca-file", dex.CAFile)
	addr := freeAddr(t)
	e := preparedEnv(t, map[string]string{
		"config.yaml": oauthConfig("http://"+addr, dex.Issuer),
		"mcpservers/sso.yaml": mcpServerYAML("sso", "type: streamable-http",
			"autoStart: true", "url: "+yamlValue(url), "timeout: 10", "auth: {forwardToken: true}"),
	})
	e.start(t, "-listen", addr, "-extra-ca-file", dex.CAFile)

	whoami := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		cs := connectMCP(t, "http://"+addr+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{idTokenOf(t, dex, dextest.ClientMusterd, user)}}})
		eventually(t, user+" has the forwarding server's tools", func() bool { return slices.Contains(metaToolNames(t, cs), "x_sso_whoami") })
		out, isErr := musterCall(t, cs, "x_sso_whoami", nil)
		require.False(t, isErr, out)
		whoami[user] = out
		out, isErr = musterCall(t, cs, "core_auth_login", map[string]any{"server": "sso"})
		assert.False(t, isErr)
		assert.Equal(t, "Server 'sso' is already authenticated.", out, "connected by SSO, as muster answers")
		out, isErr = musterCall(t, cs, "core_auth_logout", map[string]any{"server": "sso"})
		assert.True(t, isErr)
		assert.Contains(t, out, "Server 'sso' uses SSO and is managed automatically.")
	}
	assert.NotEqual(t, whoami["alice"], whoami["bob"], "each calls with their own token")
	s, _ := e.server(t, "sso")
	assert.Equal(t, "Auth Required", string(s.Status.State), "musterd's own connection has no user's token")
}
