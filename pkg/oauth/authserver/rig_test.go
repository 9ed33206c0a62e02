package authserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
)

// rig is an authorization server on a loopback HTTP server, with a real
// Dex (TLS) upstream whose client for musterd redirects to it.
type rig struct {
	as   *Server
	base string
	dex  *dextest.Dex
}

// clientRedirect is a client's redirect URI nobody listens on: the tests
// read musterd's redirects without following them.
const clientRedirect = "http://127.0.0.1:9/client/callback"

func startRig(t *testing.T, dexOpts dextest.Options, tune func(*Options)) *rig {
	t.Helper()
	var handler http.Handler = http.NotFoundHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	dexOpts.Clients = []dextest.Client{{ID: dextest.ClientMusterd, Secret: "musterd-secret", RedirectURIs: []string{srv.URL + PathCallback}}}
	dex := dextest.Start(t, dexOpts)
	opts := Options{
		Issuer:                        srv.URL,
		Upstream:                      Upstream{Issuer: dex.Issuer, ClientID: dextest.ClientMusterd, ClientSecret: "musterd-secret"},
		HTTPClient:                    dex.HTTPClient,
		AllowPublicClientRegistration: true,
		AllowLocalhostRedirectURIs:    true,
	}
	if tune != nil {
		tune(&opts)
	}
	as, err := New(opts)
	require.NoError(t, err)
	handler = as.Handler()
	return &rig{as: as, base: srv.URL, dex: dex}
}

// call sends a request and returns the status, the headers and the body
// decoded as JSON (nil when it is not).
func (r *rig) call(t *testing.T, method, path string, body io.Reader, header http.Header) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, r.base+path, body)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

var noRedirects = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// register registers a client with the JSON body; header may carry a
// registration token.
func (r *rig) register(t *testing.T, body string, header http.Header) (int, map[string]any) {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/json")
	status, _, out := r.call(t, http.MethodPost, PathRegister, strings.NewReader(body), header)
	return status, out
}

// publicClient registers a public web client with clientRedirect.
func (r *rig) publicClient(t *testing.T) string {
	t.Helper()
	status, out := r.register(t, `{"client_name":"test","redirect_uris":["`+clientRedirect+`"],"token_endpoint_auth_method":"none","application_type":"web"}`, nil)
	require.Equal(t, http.StatusCreated, status, out)
	id, _ := out["client_id"].(string)
	require.NotEmpty(t, id)
	return id
}

// authorizeURL is an authorization request of client with PKCE S256.
func (r *rig) authorizeURL(client, state, verifier string) string {
	q := url.Values{
		"response_type": {"code"}, "client_id": {client}, "redirect_uri": {clientRedirect},
		"scope": {"openid email"}, "state": {state},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
	}
	return r.base + PathAuthorize + "?" + q.Encode()
}

// login runs the whole flow for user through Dex's login form and
// returns where musterd sent the browser back to the client.
func (r *rig) login(t *testing.T, client, user, verifier string) *url.URL {
	t.Helper()
	upstream := r.dex.BrowserRedirect(t, r.authorizeURL(client, "client-state", verifier), user)
	require.Equal(t, r.base+PathCallback, upstream.Scheme+"://"+upstream.Host+upstream.Path, "Dex sends the user back to musterd")
	return r.follow(t, upstream.String())
}

// follow GETs u and returns the redirect it answers.
func (r *rig) follow(t *testing.T, u string) *url.URL {
	t.Helper()
	resp, err := noRedirects.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := resp.Location()
	require.NoError(t, err)
	return loc
}

// token posts to the token endpoint.
func (r *rig) token(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	status, _, out := r.call(t, http.MethodPost, PathToken, strings.NewReader(form.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	return status, out
}

// tokens logs user in and redeems the code.
func (r *rig) tokens(t *testing.T, client, user string) map[string]any {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	back := r.login(t, client, user, verifier)
	status, out := r.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
		"client_id": {client}, "redirect_uri": {clientRedirect}, "code_verifier": {verifier}})
	require.Equal(t, http.StatusOK, status, out)
	return out
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
