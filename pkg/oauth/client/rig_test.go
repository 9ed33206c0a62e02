package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/pkg/oauth/client"
)

// rig is musterd's OAuth client served over HTTP as musterd serves it,
// a real Dex (TLS, its own CA) with musterd registered at it for the
// client's callback, and a protected resource that accepts only access
// tokens Dex issued to musterd.
type rig struct {
	dex     *dextest.Dex
	musterd *httptest.Server
	c       *client.Client
	store   *client.MemoryStore
	logs    *logtest.Buffer
	logins  chan client.Login
	skew    atomic.Int64 // added to the client's clock, in ns
	// loginsAnswered is how many OnLogin calls had returned when the
	// last callback's handler did.
	loginsAnswered atomic.Int64
	loginsDone     atomic.Int64
	// tokenPosts counts the client's requests to Dex's token endpoint.
	tokenPosts atomic.Int64
	lastCode   atomic.Pointer[url.Values]
	resource   *protected
}

type rigOptions struct {
	idTokenExpiry time.Duration
}

func newRig(t *testing.T, ro rigOptions) *rig {
	t.Helper()
	r := &rig{store: client.NewMemoryStore(), logs: &logtest.Buffer{}, logins: make(chan client.Login, 8)}
	var handler atomic.Pointer[http.Handler]
	r.musterd = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		(*handler.Load()).ServeHTTP(w, req)
		if req.URL.Path == client.DefaultCallbackPath {
			r.loginsAnswered.Store(r.loginsDone.Load())
		}
	}))
	t.Cleanup(r.musterd.Close)
	r.dex = dextest.Start(t, dextest.Options{
		TLS:           true,
		IDTokenExpiry: ro.idTokenExpiry,
		Clients: []dextest.Client{{ID: dextest.ClientMusterd, Secret: "musterd-secret",
			RedirectURIs: []string{r.musterd.URL + client.DefaultCallbackPath}}},
	})
	c, err := client.New(client.Options{
		PublicURL:    r.musterd.URL,
		HTTPClient:   &http.Client{Timeout: 30 * time.Second, Transport: countTokenPosts{r.dex.HTTPClient.Transport, &r.tokenPosts, &r.lastCode}},
		ClientID:     dextest.ClientMusterd,
		ClientSecret: "musterd-secret",
		Store:        r.store,
		Logger:       slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnLogin:      func(l client.Login) { r.logins <- l; r.loginsDone.Add(1) },
		Now:          func() time.Time { return time.Now().Add(time.Duration(r.skew.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	h := c.Handler()
	handler.Store(&h)
	r.resource = newProtected(t, r.dex)
	return r
}

// protected is a protected MCP server's HTTP face: 401 with an RFC 9728
// challenge without a valid token; with one, the token's email. It
// checks tokens as a resource server of Dex would: signature, issuer,
// expiry and audience (musterd's client), with go-oidc.
type protected struct {
	srv *httptest.Server
	// prm is served at /.well-known/oauth-protected-resource/mcp.
	prm func() any
}

func newProtected(t *testing.T, dex *dextest.Dex) *protected {
	t.Helper()
	ctx := oidc.ClientContext(context.Background(), dex.HTTPClient)
	provider, err := oidc.NewProvider(ctx, dex.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: dextest.ClientMusterd})
	p := &protected{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.prm())
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, req *http.Request) {
		bearer, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		var claims struct {
			Email string `json:"email"`
		}
		if ok {
			tok, err := verifier.Verify(ctx, bearer)
			if err == nil && tok.Claims(&claims) == nil {
				fmt.Fprint(w, claims.Email)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, scope="openid email"`, p.srv.URL+"/.well-known/oauth-protected-resource/mcp"))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.prm = func() any {
		return oauthex.ProtectedResourceMetadata{Resource: p.srv.URL + "/mcp", AuthorizationServers: []string{dex.Issuer}}
	}
	return p
}

// url is the protected server's MCP URL.
func (p *protected) url() string { return p.srv.URL + "/mcp" }

// challenge is the Server as the supervisor reports it after its 401.
func (p *protected) challenge(t *testing.T, name string) client.Server {
	t.Helper()
	resp, err := http.Get(p.url())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the protected server answered %s without a token", resp.Status)
	}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 {
		t.Fatalf("challenge %q: %v", resp.Header.Values("WWW-Authenticate"), err)
	}
	return client.Server{Name: name, URL: p.url(), ResourceMetadata: cs[0].Params["resource_metadata"], Scope: cs[0].Params["scope"]}
}

// call calls the protected server with token, returning its status and
// body.
func (p *protected) call(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// noRedirects is a browser that stops at the first redirect.
var noRedirects = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// start GETs a login's start URL and returns where it redirects.
func (r *rig) start(t *testing.T, startURL string) *url.URL {
	t.Helper()
	resp, err := noRedirects.Get(startURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("GET %s: %s, want 302 Found", startURL, resp.Status)
	}
	loc, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// get GETs u as the browser does at the callback: its status and body.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := noRedirects.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// login runs user's whole login as owner to s: Begin, the start URL,
// Dex's login form; it returns the callback URL Dex sent the browser
// to, not yet visited.
func (r *rig) login(t *testing.T, owner, user string, s client.Server) *url.URL {
	t.Helper()
	startURL, err := r.c.Begin(t.Context(), owner, s)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	authURL := r.start(t, startURL)
	return r.dex.BrowserRedirect(t, authURL.String(), user)
}

// token returns owner's current access token for the Dex issuer.
func (r *rig) token(t *testing.T, owner string) string {
	t.Helper()
	ts, ok := r.c.TokenSource(owner, r.dex.Issuer)
	if !ok {
		t.Fatalf("no token source for %s", owner)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatalf("token of %s: %v", owner, err)
	}
	return tok.AccessToken
}

// stored is owner's token as the store holds it.
func (r *rig) stored(t *testing.T, owner string) (client.Token, bool) {
	t.Helper()
	tok, ok, err := r.store.Token(t.Context(), owner, r.dex.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	return tok, ok
}

// countTokenPosts counts the POSTs to a token endpoint it carries.
type countTokenPosts struct {
	base http.RoundTripper
	n    *atomic.Int64
	// lastCode is the form of the last code exchange.
	lastCode *atomic.Pointer[url.Values]
}

func (c countTokenPosts) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/token") {
		c.n.Add(1)
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("grant_type") == "authorization_code" {
			c.lastCode.Store(&form)
		}
	}
	return c.base.RoundTrip(req)
}
