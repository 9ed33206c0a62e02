package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
	oauthclient "github.com/musterd/musterd/pkg/oauth/client"
)

// A server behind another provider (spec.auth.tokenExchange) is each
// user's at once, as muster's cross-cluster SSO makes it: musterd trades
// the ID token the user presented (musterd's provider's, Dex A's) at the
// server's provider (Dex B, whose OIDC connector trusts A) for one of B's,
// and the user's own connection carries it, so the server sees each user
// as themself. musterd is a public client at B, named by its client ID
// at A. A server whose expectedIssuer is not B is not reached: the
// exchanged token is refused before it is sent, and the user's
// auth://status and musterd's log say why. No token reaches the log.
// exchangeRig is musterd whose provider is Dex A, beside Dex B, whose
// OIDC connector cluster-a trusts A and which knows musterd as a public
// client, and a server (mcp-fake) that takes B's tokens alone.
type exchangeRig struct {
	a, b         *dextest.Dex
	mcpURL, addr string
	cas          string // both Dexes' CAs, for -extra-ca-file
}

func startExchangeRig(t *testing.T) *exchangeRig {
	t.Helper()
	r := &exchangeRig{a: dextest.Start(t, dextest.Options{TLS: true}), addr: freeAddr(t)}
	r.b = dextest.Start(t, dextest.Options{TLS: true,
		Trusts:  []dextest.Trust{{ConnectorID: "cluster-a", Upstream: r.a}},
		Clients: []dextest.Client{{ID: dextest.ClientMusterd, Public: true}}})
	r.mcpURL, _ = mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami",
		"-authorization-server", r.b.Issuer, "-audience", dextest.ClientMusterd, "-ca-file", r.b.CAFile)
	r.cas = filepath.Join(t.TempDir(), "cas.pem")
	require.NoError(t, os.WriteFile(r.cas, append(readFile(t, r.a.CAFile), readFile(t, r.b.CAFile)...), 0o600))
	return r
}

// exchange is the auth line of a server whose users' tokens B trades,
// with extra settings (", expectedIssuer: …").
func (r *exchangeRig) exchange(extra string) string {
	return fmt.Sprintf("auth: {tokenExchange: {enabled: true, dexTokenEndpoint: %s, connectorId: cluster-a%s}}", yamlValue(r.b.Issuer+"/token"), extra)
}

// start runs musterd with the servers named (each with its extra
// settings), every one the mcp-fake behind B.
func (r *exchangeRig) start(t *testing.T, servers map[string]string, args ...string) *fsEnv {
	t.Helper()
	files := map[string]string{"config.yaml": oauthConfig("http://"+r.addr, r.a.Issuer)}
	for name, extra := range servers {
		files["mcpservers/"+name+".yaml"] = mcpServerYAML(name, "type: streamable-http", "autoStart: true", "url: "+yamlValue(r.mcpURL),
			"timeout: 10", r.exchange(extra))
	}
	e := preparedEnv(t, files)
	e.start(t, append([]string{"-listen", r.addr, "-extra-ca-file", r.cas}, args...)...)
	return e
}

func TestE2EATokenExchangeServerIsEachUsersWithATokenOfItsOwnProvider(t *testing.T) {
	r := startExchangeRig(t)
	a, b, addr := r.a, r.b, r.addr
	const wrongIssuer = "https://dex.cluster-b.example.com"
	e := r.start(t, map[string]string{"k8s": "", "proxied": ", expectedIssuer: " + wrongIssuer}, "-log-level", "debug")

	// What B says each user is: the subject of the token B gives for their
	// ID token of A's, checked here with B's keys.
	provider, err := oidc.NewProvider(b.Context(t.Context()), b.Issuer)
	require.NoError(t, err)
	verifier := provider.Verifier(&oidc.Config{ClientID: dextest.ClientMusterd})
	oracle := oauthclient.NewExchanger(oauthclient.ExchangerOptions{HTTPClient: b.HTTPClient})
	subjectAtB := func(idToken string) string {
		tok, err := oracle.Exchange(t.Context(), oauthclient.Exchange{Endpoint: b.Issuer + "/token", ConnectorID: "cluster-a", ClientID: dextest.ClientMusterd}, idToken)
		require.NoError(t, err)
		id, err := verifier.Verify(b.Context(t.Context()), tok.AccessToken)
		require.NoError(t, err)
		return id.Subject
	}

	var tokens []string
	whoami := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		idToken := idTokenOf(t, a, dextest.ClientMusterd, user)
		tokens = append(tokens, idToken)
		cs := connectMCP(t, "http://"+addr+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{idToken}}})
		// Asked at once, as muster's harness asks: the connection that
		// the session's start opened is waited for.
		out, isErr := musterCall(t, cs, "core_auth_login", map[string]any{"server": "k8s"})
		assert.False(t, isErr, out)
		assert.Equal(t, "Server 'k8s' is already authenticated.", out)
		assert.Contains(t, metaToolNames(t, cs), "x_k8s_whoami", "%s has the exchanging server's tools", user)
		out, isErr = musterCall(t, cs, "x_k8s_whoami", nil)
		require.False(t, isErr, out)
		whoami[user], _, _ = strings.Cut(strings.TrimSpace(out), " ") // "USER [TOKEN]"
		assert.Equal(t, subjectAtB(idToken), whoami[user], "%s calls as themself, with a token of B's", user)

		out, isErr = musterCall(t, cs, "core_auth_logout", map[string]any{"server": "k8s"})
		assert.True(t, isErr)
		assert.Contains(t, out, "Server 'k8s' uses SSO and is managed automatically.")

		// The server whose expectedIssuer is not B's is not the user's.
		var status struct {
			Servers []struct {
				Name, Status, Error  string
				TokenExchangeEnabled bool `json:"token_exchange_enabled"`
				SSOAttemptFailed     bool `json:"sso_attempt_failed"`
			} `json:"servers"`
		}
		eventually(t, user+"'s auth://status says why the proxied server is not theirs", func() bool {
			require.NoError(t, json.Unmarshal([]byte(authStatus(t, cs)), &status))
			return len(status.Servers) == 2 && status.Servers[1].SSOAttemptFailed
		}, func() string { return authStatus(t, cs) })
		k8s, proxied := status.Servers[0], status.Servers[1]
		assert.Equal(t, "k8s", k8s.Name)
		assert.Equal(t, "connected", k8s.Status)
		assert.True(t, k8s.TokenExchangeEnabled)
		assert.Equal(t, "proxied", proxied.Name)
		assert.Equal(t, "auth_required", proxied.Status)
		assert.True(t, proxied.TokenExchangeEnabled)
		assert.Contains(t, proxied.Error, fmt.Sprintf("the token is issued by %q, not by %q as expected", b.Issuer, wrongIssuer))
		assert.NotContains(t, metaToolNames(t, cs), "x_proxied_whoami")
	}
	assert.NotEqual(t, whoami["alice"], whoami["bob"])
	s, _ := e.server(t, "k8s")
	assert.Equal(t, "Auth Required", string(s.Status.State), "musterd's own connection has no user's token")

	eventually(t, "the log says why the proxied server was not opened", func() bool {
		log := e.stderr.String()
		return strings.Contains(log, "could not be opened") && strings.Contains(log, wrongIssuer) && strings.Contains(log, "expectedIssuer")
	}, func() string { return e.stderr.String() })
	log := e.stderr.String()
	for _, token := range tokens {
		assert.NotContains(t, log, token, "a token in musterd's log")
	}
	assert.NotContains(t, log, "eyJhbGci", "a JWT in musterd's log")
}

// An exchanged token is kept: the user's calls cost no exchange of their
// own. When the server stops taking it (401: mcp-fake's POST
// /refuse-taken, as a server whose user's grant was revoked), musterd
// trades the user's token once more, and the request goes again with the
// new one: the call succeeds, the server refused once, and the user's
// connection stays.
func TestE2EARefusedExchangedTokenIsTradedAnewOnce(t *testing.T) {
	r := startExchangeRig(t)
	a, addr, mcpURL := r.a, r.addr, r.mcpURL
	e := r.start(t, map[string]string{"k8s": ""})
	origin := strings.TrimSuffix(mcpURL, "/mcp")
	fake := func(method, path string) string {
		req, err := http.NewRequest(method, origin+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, path, body)
		return strings.TrimSpace(string(body))
	}
	exchanges := func() int { return strings.Count(e.stderr.String(), "token exchanged") }

	cs := connectMCP(t, "http://"+addr+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{idTokenOf(t, a, dextest.ClientMusterd, "alice")}}})
	out, isErr := musterCall(t, cs, "core_auth_login", map[string]any{"server": "k8s"})
	require.False(t, isErr, out)
	for range 3 {
		out, isErr = musterCall(t, cs, "x_k8s_whoami", nil)
		require.False(t, isErr, out)
	}
	assert.Equal(t, 1, exchanges(), "one exchange for alice's connection and her calls")
	before := fake(http.MethodGet, "/refusals") // musterd's own connection, without a token

	// Dex's tokens name the second they were minted: one minted in the
	// same second as the refused one would read the same, and be refused
	// too.
	minted := time.Now().Unix()
	eventually(t, "a second after alice's token was minted", func() bool { return time.Now().Unix() > minted })
	fake(http.MethodPost, "/refuse-taken")
	out, isErr = musterCall(t, cs, "x_k8s_whoami", nil)
	require.False(t, isErr, "a call after the server refused the kept token: %s", out)
	assert.Equal(t, fmt.Sprint(exchangeAtoi(t, before)+1), fake(http.MethodGet, "/refusals"), "refused once")
	assert.Equal(t, 2, exchanges(), "traded anew once")
	out, isErr = musterCall(t, cs, "x_k8s_whoami", nil)
	require.False(t, isErr, "alice's connection stays: %s", out)
	assert.Equal(t, 2, exchanges(), "the new token is kept")
}

func exchangeAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// A user whose token the server's provider would not exchange (an ID
// token without the name claim Dex's OIDC connector requires, which
// musterd itself takes) is not connected, and says why; when the user
// comes back with a token it does take, the connection is opened at
// once, not after the pause between attempts.
func TestE2EANewTokenGetsAFailedExchangeTriedAgainAtOnce(t *testing.T) {
	r := startExchangeRig(t)
	a, addr := r.a, r.addr
	r.start(t, map[string]string{"k8s": ""})

	alice := a.User(t, "alice")
	nameless, err := a.OAuth2Config(t, dextest.ClientMusterd, "openid", "email").PasswordCredentialsToken(a.Context(t.Context()), alice.Email, alice.Password)
	require.NoError(t, err)
	first := connectMCP(t, "http://"+addr+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{nameless.Extra("id_token").(string)}}})
	out, isErr := musterCall(t, first, "core_auth_login", map[string]any{"server": "k8s"})
	assert.True(t, isErr, "not connected with a token the provider does not exchange: %s", out)
	assert.Contains(t, authStatus(t, first), `"sso_attempt_failed":true`)

	second := connectMCP(t, "http://"+addr+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{idTokenOf(t, a, dextest.ClientMusterd, "alice")}}})
	out, isErr = musterCall(t, second, "core_auth_login", map[string]any{"server": "k8s"})
	assert.False(t, isErr, out)
	assert.Equal(t, "Server 'k8s' is already authenticated.", out, "connected at once with the new token")
	out, isErr = musterCall(t, second, "x_k8s_whoami", nil)
	assert.False(t, isErr, out)
}
