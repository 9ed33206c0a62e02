package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/redistest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// loginRig is musterd signing users in to a protected server of a real
// Dex: Dex (TLS, its own CA) knows musterd as a public client whose
// redirect is musterd's /oauth/proxy/callback; the server (mcp-fake)
// accepts only Dex's tokens for musterd; musterd trusts Dex's CA.
type loginRig struct {
	*fsEnv
	dex       *dextest.Dex
	serverURL string // the protected server's
}

func startLoginRig(t *testing.T) *loginRig {
	t.Helper()
	return startLoginRigScoped(t, "openid email")
}

// startLoginRigScoped is startLoginRig with the server asking for scopes
// (space-separated): with offline_access, Dex gives refresh tokens.
func startLoginRigScoped(t *testing.T, scopes string) *loginRig {
	t.Helper()
	addr := freeAddr(t)
	public := "http://" + addr
	// musterd's client ID is its client metadata document's URL, as
	// muster's is; Dex, which reads no such document, knows it as a static
	// public client of that ID.
	clientID := public + "/.well-known/oauth-client.json"
	dex := dextest.Start(t, dextest.Options{TLS: true, Clients: []dextest.Client{
		{ID: clientID, Public: true, RedirectURIs: []string{public + "/oauth/proxy/callback"}},
	}})
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami,report",
		"-authorization-server", dex.Issuer, "-audience", clientID, "-ca-file", dex.CAFile, "-scopes", scopes)

	e := preparedEnv(t, map[string]string{
		"config.yaml": fmt.Sprintf(`aggregator:
  oauth:
    mcpClient:
      enabled: true
      publicUrl: %s
`, public),
		"mcpservers/protected.yaml": mcpServerYAML("protected", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10"),
	})
	e.start(t, "-listen", addr, "-extra-ca-file", dex.CAFile)
	e.waitServer(t, "protected", "is Auth Required", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateAuthRequired })
	return &loginRig{fsEnv: e, dex: dex, serverURL: url}
}

// login runs user's login through cs: core_auth_login's URL, musterd's
// start (302 to Dex), Dex's login form, musterd's callback; then
// core_auth_login again, which connects.
func (r *loginRig) login(t *testing.T, cs *mcp.ClientSession, user string) string {
	t.Helper()
	res := musterCallResult(t, cs, "core_auth_login", map[string]any{"server": "protected"})
	require.False(t, res.IsError, res.Text)
	require.True(t, strings.HasPrefix(res.Text, "Authentication Required\n\nServer: protected\n"), res.Text)
	authURL, _ := res.Structured["authUrl"].(string)
	require.Contains(t, res.Text, authURL)
	require.True(t, strings.HasPrefix(authURL, "http://"+r.addr+"/oauth/proxy/start?state="), authURL)

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(authURL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	callback := r.dex.BrowserRedirect(t, resp.Header.Get("Location"), user)
	resp, err = http.Get(callback.String())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "musterd's callback")

	res = musterCallResult(t, cs, "core_auth_login", map[string]any{"server": "protected"})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, "Successfully connected to 'protected'!\n\nAvailable capabilities:\n- Tools: 2\n- Resources: 0\n- Prompts: 0\n\nYou can now use the tools from this server.", res.Text)
	return res.Text
}

// Two users log in to a protected server through core_auth_login, each
// at Dex's own login form, at the same time: each sees and calls the
// server's tools as themself, the other sees none of them until their
// own login, and a logout takes them away again.
func TestE2ETwoUsersLogInToAProtectedServerEachAsThemself(t *testing.T) {
	r := startLoginRig(t)
	alice, bob := r.mcpClient(t, "/mcp", "2025-11-25", nil), r.mcpClient(t, "/mcp", "2025-11-25", nil)

	assert.Contains(t, unknownTo(t, bob, "x_protected_whoami"), "tool not found", "before any login, the server's tools are nobody's")

	assert.JSONEq(t, `{"servers":[{"name":"protected","status":"auth_required","issuer":"`+r.dex.Issuer+`","auth_tool":"core_auth_login"}]}`,
		authStatus(t, alice), "before alice's login")
	r.login(t, alice, "alice")
	assert.JSONEq(t, `{"servers":[{"name":"protected","status":"connected"}]}`, authStatus(t, alice))
	assert.Contains(t, authStatus(t, bob), `"status":"auth_required"`, "alice's login is not bob's")
	assert.Contains(t, metaToolNames(t, alice), "x_protected_whoami")
	assert.NotContains(t, metaToolNames(t, bob), "x_protected_whoami", "alice's tools are not bob's")
	aliceIs, isErr := musterCall(t, alice, "x_protected_whoami", nil)
	require.False(t, isErr, aliceIs)
	assert.Contains(t, unknownTo(t, bob, "x_protected_whoami"), "tool not found", "alice's tool is unknown to bob")

	r.login(t, bob, "bob")
	bobIs, isErr := musterCall(t, bob, "x_protected_whoami", nil)
	require.False(t, isErr, bobIs)
	assert.NotEqual(t, aliceIs, bobIs, "each calls as themself")
	again, _ := musterCall(t, alice, "x_protected_whoami", nil)
	assert.Equal(t, aliceIs, again, "alice is still alice")
	out, isErr := musterCall(t, alice, "core_auth_login", map[string]any{"server": "protected"})
	assert.False(t, isErr)
	assert.Equal(t, "Server 'protected' is already authenticated.", out)

	out, isErr = musterCall(t, alice, "core_auth_logout", map[string]any{"server": "protected"})
	require.False(t, isErr, out)
	assert.NotContains(t, metaToolNames(t, alice), "x_protected_whoami")
	assert.Contains(t, unknownTo(t, alice, "x_protected_whoami"), "tool not found", "logged out, the tool is gone")
	still, isErr := musterCall(t, bob, "x_protected_whoami", nil)
	assert.False(t, isErr, still)
	assert.Equal(t, bobIs, still, "alice's logout is not bob's")

	s, _ := r.server(t, "protected")
	assert.Equal(t, v1alpha1.MCPServerStateAuthRequired, s.Status.State, "the users' connections are theirs: the server's own state is unchanged")
}

// musterResult is a tool's result unwrapped from call_tool's envelope:
// its first text, its isError and its structured content.
type musterResult struct {
	Text       string
	IsError    bool
	Structured map[string]any
}

func musterCallResult(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) musterResult {
	t.Helper()
	outer, _ := callTool(t, cs, "call_tool", map[string]any{"name": tool, "arguments": args})
	var env struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal([]byte(outer), &env), "%s: not an envelope: %s", tool, outer)
	require.NotEmpty(t, env.Content)
	return musterResult{Text: env.Content[0].Text, IsError: env.IsError, Structured: env.StructuredContent}
}

// unknownTo calls tool through call_tool, which must fail as for a tool
// nobody offers, and returns the answer.
func unknownTo(t *testing.T, cs *mcp.ClientSession, tool string) string {
	t.Helper()
	out, isErr := callTool(t, cs, "call_tool", map[string]any{"name": tool})
	require.True(t, isErr, out)
	return out
}

// With storage.type valkey (a real redis-server), a user's login to a
// protected server outlives musterd: after a restart, the same user (by
// their Dex token) connects again at once, with no new login. The store
// holds no token in the clear.
func TestE2EAUsersLoginSurvivesARestartInValkey(t *testing.T) {
	tm := startTeam(t)
	addr, public, dex, redis := tm.addr, tm.public, tm.dex, tm.redis
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami,report",
		"-authorization-server", dex.Issuer, "-audience", tm.proxyClient, "-ca-file", dex.CAFile, "-scopes", "openid email")
	e := preparedEnv(t, map[string]string{
		"config.yaml":               tm.config(),
		"mcpservers/protected.yaml": mcpServerYAML("protected", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10"),
	})
	start := func() {
		e.start(t, "-listen", addr, "-extra-ca-file", dex.CAFile)
		e.waitServer(t, "protected", "is Auth Required", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateAuthRequired })
	}
	start()
	r := &loginRig{fsEnv: e, dex: dex}
	alice := idTokenOf(t, dex, dextest.ClientMusterd, "alice")
	asAlice := func() *mcp.ClientSession {
		return connectMCP(t, public+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{alice}}})
	}
	r.login(t, asAlice(), "alice")
	before, isErr := musterCall(t, asAlice(), "x_protected_whoami", nil)
	require.False(t, isErr, before)

	e.stopWith(t, syscall.SIGTERM, 30*time.Second)
	start()
	cs := asAlice()
	out, isErr := musterCall(t, cs, "core_auth_login", map[string]any{"server": "protected"})
	require.False(t, isErr, out)
	assert.True(t, strings.HasPrefix(out, "Successfully connected to 'protected'!"), "the token held in Valkey: %s", out)
	after, isErr := musterCall(t, cs, "x_protected_whoami", nil)
	require.False(t, isErr, after)
	assert.Equal(t, before, after)

	// Her native client lists the server's tools with the rest, and calls
	// them; bob's lists none of them.
	direct := func(user string) *mcp.ClientSession {
		return connectMCP(t, public+"/mcp/direct", mcpDial{httpClient: &http.Client{Transport: bearerTransport{idTokenOf(t, dex, dextest.ClientMusterd, user)}}})
	}
	aliceDirect, bobDirect := direct("alice"), direct("bob")
	listedTo := func(cs *mcp.ClientSession) []string {
		var names []string
		for tool, err := range cs.Tools(t.Context(), nil) {
			require.NoError(t, err)
			names = append(names, tool.Name)
		}
		return names
	}
	assert.Contains(t, listedTo(aliceDirect), "x_protected_whoami")
	assert.Contains(t, listedTo(aliceDirect), "core_auth_login", "with the exposed set")
	assert.NotContains(t, listedTo(bobDirect), "x_protected_whoami")
	text, isErr := callTool(t, aliceDirect, "x_protected_whoami", nil)
	require.False(t, isErr, text)
	assert.Equal(t, before, text)

	noneInTheClear(t, redis, "eyJ")
}

// noneInTheClear requires that no key or value of the store at redis
// holds any of secrets as it is ("eyJ": any JWT), and that it holds
// something.
func noneInTheClear(t *testing.T, redis *redistest.Redis, secrets ...string) {
	t.Helper()
	raw, err := store.NewValkey(t.Context(), store.ValkeyOptions{URL: redis.URL(), KeyPrefix: "muster:"})
	require.NoError(t, err)
	defer raw.Close()
	keys, err := raw.Keys(t.Context(), "")
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		value, _, err := raw.Get(t.Context(), k)
		require.NoError(t, err)
		for _, secret := range secrets {
			assert.NotContains(t, k+string(value), secret, "%s holds a token in the clear", k)
		}
	}
}

// team is musterd run for a team: Dex (TLS, its own CA) knows musterd as
// its confidential client, and musterd's proxy for logins to protected
// servers as a public client (its ID is musterd's client metadata
// document's URL, as muster's is); the users' tokens are kept in a real
// Valkey (redis-server), sealed with the operator's key.
type team struct {
	addr, public, proxyClient string
	dex                       *dextest.Dex
	redis                     *redistest.Redis
	key                       []byte
}

func startTeam(t *testing.T) *team {
	t.Helper()
	tm := &team{redis: redistest.Start(t), addr: freeAddr(t), key: make([]byte, 32)}
	tm.public = "http://" + tm.addr
	tm.proxyClient = tm.public + "/.well-known/oauth-client.json"
	tm.dex = dextest.Start(t, dextest.Options{TLS: true, Clients: []dextest.Client{
		{ID: dextest.ClientMusterd, Secret: "musterd-secret", RedirectURIs: []string{tm.public + "/oauth/callback"}},
		{ID: tm.proxyClient, Public: true, RedirectURIs: []string{tm.public + "/oauth/proxy/callback"}},
	}})
	_, _ = rand.Read(tm.key)
	return tm
}

// config is musterd's config.yaml for the team.
func (tm *team) config() string {
	return oauthConfig(tm.public, tm.dex.Issuer, fmt.Sprintf(`      storage: {type: valkey, valkey: {url: %s}}
      encryptionKey: %s
      allowPublicClientRegistration: true
      allowLocalhostRedirectURIs: true
    mcpClient:
      enabled: true
      publicUrl: %s
`, tm.redis.Addr, base64.StdEncoding.EncodeToString(tm.key), tm.public))
}

// authStatus reads auth://status on cs, as muster's agent does.
func authStatus(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "auth://status"})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	return res.Contents[0].Text
}
