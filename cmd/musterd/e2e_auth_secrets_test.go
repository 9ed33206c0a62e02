package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/redistest"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// Every token of a run with OAuth on both faces stays out of everything
// musterd writes or serves, its log at debug level:
//   - the users' own tokens from Dex (ID, access and refresh), presented to
//     musterd and forwarded by SSO;
//   - the tokens musterd got for them at a protected server's login, and
//     their refresh tokens and PKCE verifiers, kept sealed in Valkey;
//   - musterd's own access and refresh tokens of a login through its
//     authorization server, the provider's tokens it holds for that login,
//     and the ID token it passes on;
//   - the static API token.
//
// Where they are looked for: the daemon's log, every file of its state
// dir, its event trace (-record), the event stream /api/v1/events, the
// API's reads and /metrics, and every byte of every MCP answer the users'
// clients received (their HTTP response bodies, streams included).
//
// The inventory is taken from where the tokens really are, not from what
// the test expects: what each protected server was presented (mcp-fake's
// /tokens), and what the store holds, opened with the operator's key.
func TestE2ENoTokenReachesLogsStateEventsTraceOrMCPAnswers(t *testing.T) {
	tm := startTeam(t)
	public, dex := tm.public, tm.dex
	protectedURL, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami,report",
		"-authorization-server", dex.Issuer, "-audience", tm.proxyClient, "-ca-file", dex.CAFile, "-scopes", "openid email offline_access")
	ssoURL, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami",
		"-authorization-server", dex.Issuer, "-audience", dextest.ClientMusterd, "-ca-file", dex.CAFile)
	staticToken := "static-" + newMarker()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")

	e := preparedEnv(t, map[string]string{
		"config.yaml":               tm.config(),
		"mcpservers/protected.yaml": mcpServerYAML("protected", "type: streamable-http", "autoStart: true", "url: "+yamlValue(protectedURL), "timeout: 10"),
		"mcpservers/sso.yaml": mcpServerYAML("sso", "type: streamable-http", "autoStart: true", "url: "+yamlValue(ssoURL), "timeout: 10",
			"auth: {forwardToken: true}"),
	})
	e.start(t, "-listen", tm.addr, "-extra-ca-file", dex.CAFile, "-log-level", "debug", "-api-token", staticToken, "-record", trace)
	r := &loginRig{fsEnv: e, dex: dex}

	// The event stream, open before any user comes.
	streamCtx, endStream := context.WithCancel(context.Background())
	defer endStream()
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, public+"/api/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+staticToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := readLines(resp)

	// Two users, each with their own Dex tokens, each through SSO and a
	// login of their own; every answer their clients get is kept.
	minted := map[string]string{"the static API token": staticToken}
	answers := &answerLog{}
	whoami := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		id, access, refresh := dex.PasswordLogin(t, user)
		minted[user+"'s Dex ID token"], minted[user+"'s Dex access token"], minted[user+"'s Dex refresh token"] = id, access, refresh
		cs := connectMCP(t, public+"/mcp", mcpDial{version: "2025-11-25",
			httpClient: &http.Client{Transport: answers.recording(bearerTransport{id})}})
		eventually(t, user+" has the forwarding server's tools", func() bool { return slices.Contains(metaToolNames(t, cs), "x_sso_whoami") })
		out, isErr := musterCall(t, cs, "x_sso_whoami", nil)
		require.False(t, isErr, out)
		r.login(t, cs, user)
		out, isErr = musterCall(t, cs, "x_protected_whoami", nil)
		require.False(t, isErr, out)
		whoami[user] = out
		for _, tool := range []string{"core_mcpserver_list", "core_service_list", "core_auth_login"} {
			_, _ = musterCall(t, cs, tool, map[string]any{"server": "protected"})
		}
		for _, name := range []string{"protected", "sso"} {
			out, isErr := musterCall(t, cs, "core_mcpserver_get", map[string]any{"name": name})
			require.False(t, isErr, out)
		}
		authStatus(t, cs)
		_, err := cs.ListTools(t.Context(), nil)
		require.NoError(t, err)
	}
	require.NotEqual(t, whoami["alice"], whoami["bob"])
	// Alice logs in through musterd's own authorization server too, as
	// muster's harness does, and calls with musterd's token.
	_, viaMusterd := (&authServerRig{base: public, addr: tm.addr, dex: dex, env: e}).harnessLogin(t, "alice")
	minted["musterd's access token"], minted["musterd's refresh token"], minted["the ID token musterd passed on"] =
		viaMusterd.AccessToken, viaMusterd.RefreshToken, viaMusterd.IDToken
	asViaMusterd := connectMCP(t, public+"/mcp", mcpDial{version: "2025-11-25",
		httpClient: &http.Client{Transport: answers.recording(bearerTransport{viaMusterd.AccessToken})}})
	eventually(t, "musterd's token has the forwarding server's tools", func() bool { return slices.Contains(metaToolNames(t, asViaMusterd), "x_sso_whoami") })
	out, isErr := musterCall(t, asViaMusterd, "x_sso_whoami", nil)
	require.False(t, isErr, out)
	authStatus(t, asViaMusterd)
	// The static token's caller, on the native view.
	direct := connectMCP(t, public+"/mcp/direct", mcpDial{httpClient: &http.Client{Transport: answers.recording(bearerTransport{staticToken})}})
	_, err = direct.ListTools(t.Context(), nil)
	require.NoError(t, err)

	// The inventory: what the servers were given, and what the store holds.
	for name, url := range map[string]string{"protected": protectedURL, "sso": ssoURL} {
		tokens := presentedTokens(t, url)
		require.GreaterOrEqual(t, len(tokens), 2, "%s was given each user's token", name)
		for i, tok := range tokens {
			minted[fmt.Sprintf("token %d given to %s", i, name)] = tok
		}
	}
	held := heldSecrets(t, tm.redis, tm.key)
	require.NotEmpty(t, held, "the store holds the users' tokens")
	for what, secret := range held {
		minted[what] = secret
	}

	// What musterd served and wrote.
	outputs := map[string]string{"the MCP answers": answers.String()}
	for _, path := range []string{"/api/v1/overview", "/api/v1/resources", "/api/v1/kinds", "/metrics",
		"/api/v1/resources/MCPServer/default/protected", "/api/v1/resources/MCPServer/default/sso",
		"/api/v1/resources/MCPServer/default/protected/events", "/api/v1/resources/MCPServer/default/sso/events"} {
		req, err := http.NewRequest(http.MethodGet, public+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+staticToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		outputs[path] = string(body)
	}
	endStream()
	select {
	case <-events.ended:
	case <-time.After(e2eDeadline):
		t.Fatal("the event stream did not end with its context")
	}
	outputs["/api/v1/events"] = events.text()
	outputs["stderr log"] = e.stderr.String()
	outputs["the trace"] = string(readFile(t, trace))
	require.NoError(t, filepath.WalkDir(e.state, func(path string, d iofs.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() {
			rel, _ := filepath.Rel(e.state, path)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			outputs["state "+rel] = string(data)
		}
		return nil
	}))

	// Not vacuous: the outputs are about these users and servers.
	assert.Contains(t, outputs["stderr log"], "level=DEBUG")
	assert.Contains(t, outputs["the MCP answers"], "Successfully connected to 'protected'!")
	assert.Contains(t, outputs["the MCP answers"], whoami["alice"])
	assert.Contains(t, outputs["the trace"], "protected")
	assert.Contains(t, outputs["/api/v1/events"], "protected")

	t.Logf("looked for %d secrets in %d outputs (%d bytes of MCP answers, %d of log)", len(minted), len(outputs),
		len(outputs["the MCP answers"]), len(outputs["stderr log"]))
	for where, text := range outputs {
		for what, secret := range minted {
			for _, form := range secretForms(secret) {
				if i := strings.Index(text, form); i >= 0 {
					line := text[strings.LastIndexByte(text[:i], '\n')+1:]
					line, _, _ = strings.Cut(line, "\n")
					t.Errorf("%s appears in %s: %.300s", what, where, line)
					break
				}
			}
		}
	}
}

// secretForms are the pieces of a secret to look for: every 24
// characters of it from each 8th, so that any 32 of it in a row are
// found, a log line's truncation or a split as much as the whole. Of a
// JWT only its signature is the secret: its header is every token's.
func secretForms(secret string) []string {
	if parts := strings.Split(secret, "."); len(parts) == 3 {
		secret = parts[2]
	}
	const window, step = 24, 8
	if len(secret) <= window {
		return []string{secret}
	}
	var forms []string
	for i := 0; i+window <= len(secret); i += step {
		forms = append(forms, secret[i:i+window])
	}
	return forms
}

// presentedTokens asks the mcp-fake at url (…/mcp) which tokens it let in.
func presentedTokens(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/tokens")
	require.NoError(t, err)
	defer resp.Body.Close()
	var tokens []string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tokens))
	return tokens
}

// heldSecrets opens every entry of the store at redis with key and returns
// the secrets in it: the users' access and refresh tokens and any PKCE
// verifier of a login under way.
func heldSecrets(t *testing.T, redis *redistest.Redis, key []byte) map[string]string {
	t.Helper()
	raw, err := store.NewValkey(t.Context(), store.ValkeyOptions{URL: redis.URL(), KeyPrefix: "muster:"})
	require.NoError(t, err)
	defer raw.Close()
	sealed, err := store.Encrypted(raw, key)
	require.NoError(t, err)
	keys, err := raw.Keys(t.Context(), "")
	require.NoError(t, err)
	held := map[string]string{}
	for _, k := range keys {
		value, found, err := sealed.Get(t.Context(), k)
		require.NoError(t, err, "%s opens with the operator's key", k)
		if !found {
			continue
		}
		var fields any
		if json.Unmarshal(value, &fields) != nil {
			continue
		}
		collectSecrets(fields, "the store's "+k, held)
	}
	return held
}

// secretFields are the fields of the store's values that hold a secret:
// the OAuth client's tokens and login verifiers (a, r, v), and the
// authorization server's upstream tokens and login verifiers.
var secretFields = map[string]bool{"a": true, "r": true, "v": true,
	"access_token": true, "refresh_token": true, "id_token": true, "verifier": true, "client_secret": true}

// collectSecrets adds to held the secretFields of value, at any depth.
func collectSecrets(value any, where string, held map[string]string) {
	switch v := value.(type) {
	case map[string]any:
		for f, x := range v {
			if s, ok := x.(string); ok && secretFields[f] && len(s) >= 16 && !strings.HasPrefix(s, "http") {
				held[where+" "+f] = s
				continue
			}
			collectSecrets(x, where+" "+f, held)
		}
	case []any:
		for i, x := range v {
			collectSecrets(x, fmt.Sprintf("%s[%d]", where, i), held)
		}
	}
}

// answerLog keeps every response body its transports read.
type answerLog struct{ logtest.Buffer }

func (l *answerLog) recording(inner http.RoundTripper) http.RoundTripper {
	return recordingTransport{inner: inner, log: l}
}

type recordingTransport struct {
	inner http.RoundTripper
	log   io.Writer
}

func (r recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = teeBody{Reader: io.TeeReader(resp.Body, r.log), Closer: resp.Body}
	return resp, nil
}

type teeBody struct {
	io.Reader
	io.Closer
}
