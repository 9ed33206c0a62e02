package client

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// fakeAS is an authorization server's metadata and registration
// endpoint, for the unit tests of what musterd sends before any login:
// its registrations are recorded.
type fakeAS struct {
	srv  *httptest.Server
	meta oauthex.AuthServerMeta
	mu   sync.Mutex
	regs []oauthex.ClientRegistrationMetadata
}

func newFakeAS(t *testing.T, edit func(m *oauthex.AuthServerMeta)) *fakeAS {
	t.Helper()
	as := &fakeAS{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(as.meta)
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m oauthex.ClientRegistrationMetadata
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		as.mu.Lock()
		as.regs = append(as.regs, m)
		n := len(as.regs)
		as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": "registered-" + string(rune('0'+n)), "client_secret": "s3cret-registered", "redirect_uris": m.RedirectURIs})
	})
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	as.meta = oauthex.AuthServerMeta{
		Issuer:                        as.srv.URL,
		AuthorizationEndpoint:         as.srv.URL + "/authorize",
		TokenEndpoint:                 as.srv.URL + "/token",
		RegistrationEndpoint:          as.srv.URL + "/register",
		ResponseTypesSupported:        []string{"code"},
		CodeChallengeMethodsSupported: []string{"S256"},
		ScopesSupported:               []string{"read", "write"},
	}
	if edit != nil {
		edit(&as.meta)
	}
	return as
}

func (as *fakeAS) registrations() []oauthex.ClientRegistrationMetadata {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]oauthex.ClientRegistrationMetadata(nil), as.regs...)
}

func newTestClient(t *testing.T, opts Options) *Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// authQuery follows Begin's start URL through Handler and returns the
// provider URL's query.
func authQuery(t *testing.T, c *Client, owner string, s Server) url.Values {
	t.Helper()
	start, err := c.Begin(t.Context(), owner, s)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, start, nil))
	if rec.Code != http.StatusFound {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	loc, err := url.Parse(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc.Query()
}

// Without a preregistered client, musterd registers itself at a provider
// that offers dynamic registration, once per issuer, as a native
// application on a loopback URL and a web one elsewhere (SEP-837).
func TestDynamicRegistrationOncePerIssuerWithTheApplicationType(t *testing.T) {
	for _, tc := range []struct{ public, appType string }{
		{"http://127.0.0.1:8090", "native"},
		{"http://localhost:8090", "native"},
		{"https://musterd.example.com", "web"},
	} {
		t.Run(tc.public, func(t *testing.T) {
			as := newFakeAS(t, nil)
			c := newTestClient(t, Options{PublicURL: tc.public})
			s := Server{Name: "jira", URL: "https://jira.example.com/mcp", Issuer: as.srv.URL, Scope: "read"}
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if _, err := c.Begin(t.Context(), "user:bob", s); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			q := authQuery(t, c, "user:alice", s)
			regs := as.registrations()
			if len(regs) != 1 {
				t.Fatalf("%d registrations for nine logins at one issuer, eight at once, want 1", len(regs))
			}
			r := regs[0]
			if r.ApplicationType != tc.appType || len(r.RedirectURIs) != 1 || r.RedirectURIs[0] != tc.public+DefaultCallbackPath ||
				strings.Join(r.GrantTypes, " ") != "authorization_code refresh_token" {
				t.Errorf("registration %+v: want application_type %s, the callback, code and refresh grants", r, tc.appType)
			}
			if q.Get("client_id") != "registered-1" {
				t.Errorf("client_id %q, want the registered one", q.Get("client_id"))
			}
			// The provider lists no offline_access: not asked for (SEP-2207).
			if q.Get("scope") != "read" {
				t.Errorf("scope %q, want only the challenge's", q.Get("scope"))
			}
		})
	}
}

// A provider without registration, or one that reads client metadata
// documents, gets musterd's document URL as client_id (muster's
// default), which Handler serves.
func TestTheClientMetadataDocumentWhereNoRegistration(t *testing.T) {
	for name, edit := range map[string]func(*oauthex.AuthServerMeta){
		"no registration endpoint": func(m *oauthex.AuthServerMeta) { m.RegistrationEndpoint = "" },
		"documents supported":      func(m *oauthex.AuthServerMeta) { m.ClientIDMetadataDocumentSupported = true },
	} {
		t.Run(name, func(t *testing.T) {
			as := newFakeAS(t, edit)
			c := newTestClient(t, Options{PublicURL: "https://musterd.example.com/"})
			q := authQuery(t, c, "user:alice", Server{Name: "jira", URL: "https://jira.example.com/mcp", Issuer: as.srv.URL})
			want := "https://musterd.example.com" + DefaultCIMDPath
			if q.Get("client_id") != want || len(as.registrations()) != 0 {
				t.Errorf("client_id %q after %d registrations, want %s and none", q.Get("client_id"), len(as.registrations()), want)
			}
			rec := httptest.NewRecorder()
			c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, DefaultCIMDPath, nil))
			var doc struct {
				ClientID        string   `json:"client_id"`
				RedirectURIs    []string `json:"redirect_uris"`
				ApplicationType string   `json:"application_type"`
				AuthMethod      string   `json:"token_endpoint_auth_method"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.ClientID != want ||
				doc.RedirectURIs[0] != "https://musterd.example.com"+DefaultCallbackPath || doc.ApplicationType != "web" || doc.AuthMethod != "none" {
				t.Errorf("the document: %s (%v)", rec.Body, err)
			}
		})
	}
	// With a preregistered client there is no document to serve.
	c := newTestClient(t, Options{PublicURL: "https://musterd.example.com", ClientID: "musterd"})
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, DefaultCIMDPath, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("the document with a preregistered client: %d, want 404", rec.Code)
	}
}

// A login asks for the scopes already granted for the issuer besides the
// server's (SEP-2350), and offline_access where the provider lists it.
func TestScopesAccumulatePerIssuer(t *testing.T) {
	as := newFakeAS(t, func(m *oauthex.AuthServerMeta) { m.ScopesSupported = append(m.ScopesSupported, "offline_access") })
	store := NewMemoryStore()
	c := newTestClient(t, Options{PublicURL: "http://127.0.0.1:8090", ClientID: "musterd", Store: store})
	if err := store.PutToken(t.Context(), "user:alice", as.srv.URL, Token{AccessToken: "a", Scopes: []string{"read", "offline_access"}}); err != nil {
		t.Fatal(err)
	}
	s := Server{Name: "jira", URL: "https://jira.example.com/mcp", Issuer: as.srv.URL, Scope: "write"}
	if got := authQuery(t, c, "user:alice", s).Get("scope"); got != "write read offline_access" {
		t.Errorf("alice's scope %q, want the challenge's, what she holds, offline_access", got)
	}
	if got := authQuery(t, c, "user:bob", s).Get("scope"); got != "write offline_access" {
		t.Errorf("bob's scope %q: alice's grant leaked into it", got)
	}
	s.Scopes = []string{"admin"}
	if got := authQuery(t, c, "user:bob", s).Get("scope"); got != "admin offline_access" {
		t.Errorf("spec scopes: %q", got)
	}
}

// A provider that promises iss (RFC 9207) and sends none is refused, as
// one without S256 PKCE is before any login; a pinned issuer whose
// metadata names another is refused too (RFC 8414 §3.3).
func TestProvidersThatBreakTheirPromisesAreRefused(t *testing.T) {
	as := newFakeAS(t, func(m *oauthex.AuthServerMeta) { m.AuthorizationResponseIssParameterSupported = true })
	store := NewMemoryStore()
	c := newTestClient(t, Options{PublicURL: "http://127.0.0.1:8090", ClientID: "musterd", Store: store})
	q := authQuery(t, c, "user:alice", Server{Name: "jira", URL: "https://jira.example.com/mcp", Issuer: as.srv.URL})
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, DefaultCallbackPath+"?code=c&state="+url.QueryEscape(q.Get("state")), nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "unexpected issuer") {
		t.Errorf("a callback without the promised iss: %d %s", rec.Code, rec.Body)
	}

	noPKCE := newFakeAS(t, func(m *oauthex.AuthServerMeta) { m.CodeChallengeMethodsSupported = []string{"plain"} })
	if _, err := c.Begin(t.Context(), "user:alice", Server{Name: "old", URL: "https://old.example.com/mcp", Issuer: noPKCE.srv.URL}); err == nil ||
		!strings.Contains(err.Error(), "S256") || !strings.Contains(err.Error(), `"old"`) {
		t.Errorf("a provider without S256: %v", err)
	}

	other := newFakeAS(t, func(m *oauthex.AuthServerMeta) { m.Issuer = "https://someone-else.example.com" })
	if _, err := c.Issuer(t.Context(), Server{Name: "pinned", URL: "https://x.example.com/mcp", Issuer: other.srv.URL}); err == nil ||
		!strings.Contains(err.Error(), "does not match") || !strings.Contains(err.Error(), `"pinned"`) {
		t.Errorf("metadata naming another issuer: %v", err)
	}
}

// A server whose PRM starts naming another authorization server
// (SEP-2352): the wiring is told, and the registration at the old one,
// bound to it, is dropped once no server names it.
func TestAnIssuerChangeDropsTheOldRegistration(t *testing.T) {
	first, second := newFakeAS(t, nil), newFakeAS(t, nil)
	var current atomic.Pointer[string]
	current.Store(&first.srv.URL)
	prm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(oauthex.ProtectedResourceMetadata{Resource: "http://" + r.Host + "/mcp", AuthorizationServers: []string{*current.Load()}})
	}))
	t.Cleanup(prm.Close)
	var changes []string
	c := newTestClient(t, Options{PublicURL: "http://127.0.0.1:8090", OnIssuerChange: func(server, old, new string) {
		changes = append(changes, server+": "+old+" -> "+new)
	}})
	jira := Server{Name: "jira", URL: prm.URL + "/mcp"}
	pinned := Server{Name: "pinned", URL: "https://x.example.com/mcp", Issuer: first.srv.URL}

	authQuery(t, c, "user:alice", jira)
	authQuery(t, c, "user:alice", pinned)
	current.Store(&second.srv.URL)
	if q := authQuery(t, c, "user:alice", jira); q.Get("client_id") != "registered-1" || len(second.registrations()) != 1 {
		t.Errorf("after the change: client_id %q, %d registrations at the new issuer", q.Get("client_id"), len(second.registrations()))
	}
	if want := []string{"jira: " + first.srv.URL + " -> " + second.srv.URL}; !slices.Equal(changes, want) {
		t.Errorf("OnIssuerChange got %q, want %q", changes, want)
	}
	// The old issuer is still pinned's: its registration stays.
	authQuery(t, c, "user:alice", pinned)
	if n := len(first.registrations()); n != 1 {
		t.Errorf("%d registrations at the old issuer while another server names it, want 1", n)
	}
	// Once no server names it, a login there registers anew.
	pinned.Issuer = second.srv.URL
	authQuery(t, c, "user:alice", pinned)
	current.Store(&first.srv.URL)
	authQuery(t, c, "user:alice", jira)
	if n := len(first.registrations()); n != 2 {
		t.Errorf("%d registrations at the old issuer after it was dropped, want 2", n)
	}
}
