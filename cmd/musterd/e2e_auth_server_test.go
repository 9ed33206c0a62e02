package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/redistest"
)

// authServerRig is musterd with its authorization server on, a real Dex
// upstream (TLS) whose client for musterd redirects to musterd's
// /oauth/callback, and a server that takes the user's ID token
// (forwardToken), checking it against Dex's keys for musterd's audience.
type authServerRig struct {
	base string
	addr string
	dex  *dextest.Dex
	env  *fsEnv
	sso  string // the forwarding server's URL
}

func startAuthServerRig(t *testing.T, serverYAML ...string) *authServerRig {
	t.Helper()
	addr := freeAddr(t)
	base := "http://" + addr
	dex := dextest.Start(t, dextest.Options{TLS: true, Clients: []dextest.Client{
		{ID: dextest.ClientMusterd, Secret: "musterd-secret", RedirectURIs: []string{base + "/oauth/callback"}},
	}})
	sso, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami",
		"-authorization-server", dex.Issuer, "-audience", dextest.ClientMusterd, "-ca-file", dex.CAFile)
	e := preparedEnv(t, map[string]string{
		"config.yaml": oauthConfig(base, dex.Issuer, append([]string{"      provider: dex\n",
			"      allowPublicClientRegistration: true\n", "      allowLocalhostRedirectURIs: true\n"}, serverYAML...)...),
		"mcpservers/sso.yaml": mcpServerYAML("sso", "type: streamable-http",
			"autoStart: true", "url: "+yamlValue(sso), "timeout: 10", "auth: {forwardToken: true}"),
	})
	r := &authServerRig{base: base, addr: addr, dex: dex, env: e, sso: sso}
	r.start(t)
	return r
}

func (r *authServerRig) start(t *testing.T) {
	t.Helper()
	r.env.start(t, "-listen", r.addr, "-extra-ca-file", r.dex.CAFile, "-log-level", "debug")
}

// A real MCP client logs in through musterd's authorization server as a
// client does on its own: the go-sdk's AuthorizationCodeHandler, refused
// at /mcp, follows musterd's protected-resource metadata to musterd's
// authorization server metadata, registers itself, sends the user to
// /oauth/authorize (Dex's login form, driven as a browser) and redeems
// the code with PKCE. Its calls are then the user's: the forwarding
// server gets the user's ID token from Dex, not musterd's token. Once
// revoked, the access token is refused at /mcp with the challenge.
func TestE2EALoginThroughMusterdsAuthorizationServer(t *testing.T) {
	r := startAuthServerRig(t)

	resp, err := http.Get(r.base + "/.well-known/oauth-protected-resource")
	require.NoError(t, err)
	var prm oauthex.ProtectedResourceMetadata
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&prm))
	resp.Body.Close()
	assert.Equal(t, []string{r.base}, prm.AuthorizationServers, "musterd is the authorization server")

	const redirect = "http://127.0.0.1:1/callback"
	var clientID string
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "e2e", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			authURL, err := url.Parse(args.URL)
			if err != nil {
				return nil, err
			}
			clientID = authURL.Query().Get("client_id")
			back, err := r.callback(r.dex.BrowserRedirect(t, args.URL, "alice"))
			if err != nil {
				return nil, err
			}
			q := back.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp", OAuthHandler: handler}, nil)
	require.NoError(t, err, "login and connect through musterd's authorization server\n%s", r.env.stderr)
	t.Cleanup(func() { _ = cs.Close() })
	require.NotEmpty(t, clientID, "the client registered at musterd")

	ts, err := handler.TokenSource(ctx)
	require.NoError(t, err)
	tok, err := ts.Token()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tok.AccessToken, "mdat_"), "musterd's own opaque token")
	idToken, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, idToken)

	eventually(t, "alice has the forwarding server's tools", func() bool { return slices.Contains(metaToolNames(t, cs), "x_sso_whoami") })
	out, isErr := musterCall(t, cs, "x_sso_whoami", nil)
	require.False(t, isErr, out)
	user, _, _ := strings.Cut(out, " ")
	assert.Equal(t, claimsOf(t, idToken)["sub"], user, "the call is alice's")
	assert.Equal(t, []string{idToken}, presentedTokens(t, r.sso), "the server gets Dex's ID token of alice's login")

	const guarded = "/api/v1/resources/mcpservers/default/nothing/reconcile"
	code, _ := post(t, r.base+"/mcp/direct", tok.AccessToken, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.NotEqual(t, http.StatusUnauthorized, code, "the token opens the direct view")
	code, _ = post(t, r.base+guarded, tok.AccessToken, "")
	assert.NotEqual(t, http.StatusUnauthorized, code, "and the API's guarded calls")
	revoke := url.Values{"token": {tok.RefreshToken}, "client_id": {clientID}}
	resp, err = http.PostForm(r.base+"/oauth/revoke", revoke)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	code, challenge := post(t, r.base+"/mcp/direct", tok.AccessToken, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusUnauthorized, code, "the revoked login's token")
	assert.True(t, strings.HasPrefix(challenge, `Bearer resource_metadata="`+r.base+`/.well-known/oauth-protected-resource", error="invalid_token"`), challenge)
	code, _ = post(t, r.base+guarded, tok.AccessToken, "")
	assert.Equal(t, http.StatusUnauthorized, code, "nor at the API")

	log := r.env.stderr.String()
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken, idToken} {
		assert.NotContains(t, log, secret, "a token in musterd's log")
	}
}

// muster's harness logs in through musterd (harnessLogin), and the access
// token then opens the endpoint as the user, the forwarding server getting
// the user's ID token. A token exchange at /oauth/token is refused with
// invalid_grant.
func TestE2EMustersHarnessLogsInThroughMusterd(t *testing.T) {
	r := startAuthServerRig(t)
	_, tok := r.harnessLogin(t, "bob")
	cs := connectMCP(t, r.base+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{tok.AccessToken}}})
	eventually(t, "bob has the forwarding server's tools", func() bool { return slices.Contains(metaToolNames(t, cs), "x_sso_whoami") })
	out, isErr := musterCall(t, cs, "x_sso_whoami", nil)
	require.False(t, isErr, out)
	assert.Equal(t, claimsOf(t, tok.IDToken)["sub"].(string)+" ", out)
	assert.Equal(t, []string{tok.IDToken}, presentedTokens(t, r.sso), "the server gets bob's ID token")

	resp, err := http.PostForm(r.base+"/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token": {tok.IDToken}, "subject_token_type": {"urn:ietf:params:oauth:token-type:jwt"}})
	require.NoError(t, err)
	var refused struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&refused))
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "invalid_grant", refused.Error)
}

// musterdTokens is musterd's token response.
type musterdTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
}

// harnessLogin logs user in as muster's harness does (handleMusterAuthLogin):
// it registers with the redirect URI {base}/oauth/callback, the path of
// musterd's own callback from the provider, goes through /oauth/authorize
// and Dex's form, and redeems musterd's code. musterd tells the
// provider's answer (its state) from the client's: the client's own
// redirect is nothing it acts on.
func (r *authServerRig) harnessLogin(t *testing.T, user string) (string, musterdTokens) {
	t.Helper()
	callback := r.base + "/oauth/callback"
	body := fmt.Sprintf(`{"client_name":"muster-test-client","redirect_uris":[%q],"grant_types":["authorization_code","refresh_token"],
		"response_types":["code"],"token_endpoint_auth_method":"none","application_type":"web","client_uri":%q}`, callback, r.base+"/.well-known/oauth-client.json")
	resp, err := http.Post(r.base+"/oauth/register", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reg))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	verifier := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {callback},
		"scope": {"openid profile email"}, "state": {"muster-auth-test-state-0123456789abcdef"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	upstream := r.dex.BrowserRedirect(t, r.base+"/oauth/authorize?"+q.Encode(), user)
	back, err := r.callback(upstream)
	require.NoError(t, err)
	assert.Equal(t, callback, back.Scheme+"://"+back.Host+back.Path, "the client's redirect URI, the same path")
	assert.Equal(t, "muster-auth-test-state-0123456789abcdef", back.Query().Get("state"))
	assert.Equal(t, r.base, back.Query().Get("iss"))
	_, err = r.callback(back)
	assert.Error(t, err, "the client's own redirect is nothing musterd acts on")

	resp, err = http.PostForm(r.base+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
		"redirect_uri": {callback}, "client_id": {reg.ClientID}, "code_verifier": {verifier}})
	require.NoError(t, err)
	var tok musterdTokens
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return reg.ClientID, tok
}

// callback follows the provider's redirect into musterd's /oauth/callback
// and returns where musterd sends the browser on; an error when musterd
// answers anything but a redirect.
func (r *authServerRig) callback(u *url.URL) (*url.URL, error) {
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(u.String())
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("musterd's callback answered %s", resp.Status)
	}
	return resp.Location()
}

// claimsOf reads a JWT's claims, unverified, for assertions.
func claimsOf(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	require.Len(t, parts, 3)
	var out map[string]any
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(payload, &out))
	return out
}

// With storage.type valkey (a real redis-server), a login through
// musterd outlives musterd: after a restart the same access token opens
// the endpoint as the same user, and the refresh token still rotates. The
// store holds none of the tokens in the clear.
func TestE2EALoginThroughMusterdSurvivesARestartInValkey(t *testing.T) {
	redis := redistest.Start(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	r := startAuthServerRig(t, fmt.Sprintf("      storage: {type: valkey, valkey: {url: %s}}\n      encryptionKey: %s\n",
		redis.Addr, base64.StdEncoding.EncodeToString(key)))
	clientID, tok := r.harnessLogin(t, "alice")
	whoami := func() string {
		cs := connectMCP(t, r.base+"/mcp", mcpDial{version: "2025-11-25", httpClient: &http.Client{Transport: bearerTransport{tok.AccessToken}}})
		eventually(t, "alice has the forwarding server's tools", func() bool { return slices.Contains(metaToolNames(t, cs), "x_sso_whoami") })
		out, isErr := musterCall(t, cs, "x_sso_whoami", nil)
		require.False(t, isErr, out)
		return out
	}
	before := whoami()

	r.env.stopWith(t, syscall.SIGTERM, 30*time.Second)
	r.start(t)
	assert.Equal(t, before, whoami(), "the same login after the restart")
	resp, err := http.PostForm(r.base+"/oauth/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {tok.RefreshToken}})
	require.NoError(t, err)
	var fresh musterdTokens
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&fresh))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEqual(t, tok.RefreshToken, fresh.RefreshToken)

	noneInTheClear(t, redis, tok.AccessToken, tok.RefreshToken, fresh.AccessToken, fresh.RefreshToken, "eyJ")
}
