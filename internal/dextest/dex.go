package dextest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/internal/modroot"
	"github.com/musterd/musterd/internal/testca"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"
)

const (
	// Version is the Dex release `make dex` builds (hack/dex).
	Version = "v2.45.1"
	// BinEnv names a Dex binary to run instead of the one `make dex` built.
	BinEnv = "MUSTERD_DEX_BIN"
	// RequireEnv, set to 1, makes a missing Dex fail the test instead of
	// skipping it.
	RequireEnv = "MUSTERD_REQUIRE_DEX"

	// ClientMusterd and ClientOther are the IDs of the default clients:
	// the one the tests log in to, and one whose tokens carry another
	// audience.
	ClientMusterd = "musterd"
	ClientOther   = "other"
)

// Client is a static OAuth client of Dex's.
type Client struct {
	ID     string
	Secret string
	// RedirectURIs are the exact URIs Dex sends codes to.
	RedirectURIs []string
	// Public makes it a public client: no secret, PKCE (musterd's login
	// to a protected server, as muster's has no secret either).
	Public bool
}

// User is a static user of Dex's password database. Users log in with
// their Email (or, in [Dex.PasswordLogin] and [Dex.BrowserLogin], their
// Username, which the helpers resolve) and Password.
type User struct {
	Username string
	Email    string
	Password string
	// UserID is the stable ID Dex puts into the subject of its tokens.
	UserID string
}

// Options configures [Start].
type Options struct {
	// TLS serves HTTPS with a certificate from a CA made for this Dex alone.
	// Default: plain HTTP.
	TLS bool
	// Clients are Dex's static clients. Default: [DefaultClients].
	Clients []Client
	// Users are Dex's static users. Default: [DefaultUsers].
	Users []User
	// IDTokenExpiry is the lifetime of ID and access tokens. Default: Dex's
	// own (24h).
	IDTokenExpiry time.Duration
	// StartTimeout bounds the wait for Dex's discovery document. Default:
	// 30 s.
	StartTimeout time.Duration
	// Trusts are other providers whose ID tokens this Dex takes in an RFC
	// 8693 token exchange: each is an OIDC connector of this Dex's (type
	// oidc) pointed at a running Dex, which must outlive this one. Default:
	// none (the local password database alone).
	Trusts []Trust
}

// Trust is an OIDC connector of Dex's to another Dex: a token exchange
// at this Dex with connector_id ConnectorID takes an ID token of Upstream
// (any audience: Dex's connector checks issuer, signature and expiry)
// and answers with a token of this Dex's for the same user.
type Trust struct {
	// ConnectorID is the connector's ID, the exchange's connector_id.
	ConnectorID string
	// Upstream is the trusted Dex. Its CA, if any, is the connector's.
	Upstream *Dex
	// ClientID is the client at Upstream the connector logs in as (only
	// a browser login through the connector uses it); it must be one of
	// Upstream's. Default ClientMusterd.
	ClientID string
}

// DefaultClients returns the clients [Start] configures when
// Options.Clients is empty: ClientMusterd and ClientOther, each with a
// secret and a loopback redirect URI nobody listens on (the helpers never
// follow the final redirect).
func DefaultClients() []Client {
	return []Client{
		{ID: ClientMusterd, Secret: "musterd-secret", RedirectURIs: []string{"http://127.0.0.1/oauth/callback"}},
		{ID: ClientOther, Secret: "other-secret", RedirectURIs: []string{"http://127.0.0.1/other/callback"}},
	}
}

// DefaultUsers returns the users [Start] configures when Options.Users is
// empty: alice and bob.
func DefaultUsers() []User {
	return []User{
		{Username: "alice", Email: "alice@example.com", Password: "alice-password", UserID: "08a8684b-db88-4b73-90a9-3cd1661f5466"},
		{Username: "bob", Email: "bob@example.com", Password: "bob-password", UserID: "1c8a3f43-5a4b-4a3c-9c54-0d5b0d1f7e2a"},
	}
}

// Dex is a running Dex.
type Dex struct {
	// Issuer is Dex's issuer URL, e.g. https://127.0.0.1:PORT/dex.
	Issuer string
	// CAFile is the PEM file of the CA that signed Dex's certificate; empty
	// without TLS.
	CAFile string
	// CAPool holds that CA; nil without TLS.
	CAPool *x509.CertPool
	// HTTPClient reaches Dex: it trusts CAPool (and only it) under TLS.
	HTTPClient *http.Client
	// Clients and Users are what Dex was configured with.
	Clients []Client
	Users   []User
	// LogFile is Dex's output.
	LogFile string
}

// Start runs Dex for the test and stops it at t.Cleanup. It skips t, or
// fails it under MUSTERD_REQUIRE_DEX=1, when there is no Dex binary.
func Start(t testing.TB, opts Options) *Dex {
	t.Helper()
	bin := Binary(t)
	if len(opts.Clients) == 0 {
		opts.Clients = DefaultClients()
	}
	if len(opts.Users) == 0 {
		opts.Users = DefaultUsers()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	dir := t.TempDir()
	d := &Dex{Clients: opts.Clients, Users: opts.Users, HTTPClient: &http.Client{Timeout: 30 * time.Second}}
	var certFile, keyFile string
	if opts.TLS {
		ca, err := testca.Write(dir, "dextest CA")
		if err != nil {
			t.Fatalf("dextest: %v", err)
		}
		d.CAFile, d.CAPool, certFile, keyFile = ca.CAFile, ca.Pool, ca.CertFile, ca.KeyFile
		d.HTTPClient.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}
	}

	// A free port is chosen and closed before Dex binds it, so another
	// process may take it in between: Dex then exits, and Start tries again
	// on another port.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("dextest: %v", err)
		}
		scheme := "http"
		if opts.TLS {
			scheme = "https"
		}
		d.Issuer = fmt.Sprintf("%s://127.0.0.1:%d/dex", scheme, port)
		d.LogFile = filepath.Join(dir, fmt.Sprintf("dex-%d.log", attempt))
		cfgFile := filepath.Join(dir, "config.json")
		cfg, err := config(d.Issuer, port, certFile, keyFile, opts)
		if err != nil {
			t.Fatalf("dextest: %v", err)
		}
		if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
			t.Fatalf("dextest: %v", err)
		}
		exited, err := d.run(t, bin, cfgFile, opts.StartTimeout)
		if err == nil {
			return d
		}
		lastErr = err
		if !exited || !strings.Contains(logtest.Tail(d.LogFile, 20), "address already in use") {
			break
		}
	}
	t.Fatalf("dextest: %v\n%s", lastErr, logtest.Tail(d.LogFile, 20))
	return nil
}

// run starts Dex and waits until its discovery document answers. exited
// tells whether Dex stopped by itself before that.
func (d *Dex) run(t testing.TB, bin, cfgFile string, timeout time.Duration) (exited bool, err error) {
	t.Helper()
	logf, err := os.Create(d.LogFile)
	if err != nil {
		return false, err
	}
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return false, fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-done
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if d.ready(ctx) {
			t.Cleanup(stop)
			return false, nil
		}
		select {
		case err := <-done:
			return true, fmt.Errorf("dex exited before serving %s: %v", d.Issuer, err)
		case <-ctx.Done():
			stop()
			return false, fmt.Errorf("dex did not serve its discovery document and a signing key at %s within %v", d.Issuer, timeout)
		case <-tick.C:
		}
	}
}

// ready tells whether Dex answers its discovery document and publishes a
// signing key: Dex serves before its first key exists, and a token
// verified then would find no key.
func (d *Dex) ready(ctx context.Context) bool {
	var keys struct {
		Keys []json.RawMessage `json:"keys"`
	}
	return d.getJSON(ctx, "/.well-known/openid-configuration", &struct{}{}) &&
		d.getJSON(ctx, "/keys", &keys) && len(keys.Keys) > 0
}

func (d *Dex) getJSON(ctx context.Context, path string, v any) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Issuer+path, nil)
	if err != nil {
		return false
	}
	resp, err := d.HTTPClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// Binary returns the Dex binary: MUSTERD_DEX_BIN when set, else the one
// `make dex` built under the module root's .cache/dex/<Version>. When it is
// missing it skips t, or fails it under MUSTERD_REQUIRE_DEX=1.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		root, err := modroot.Dir()
		if err != nil {
			t.Fatalf("dextest: %v", err)
		}
		bin = filepath.Join(root, ".cache", "dex", Version, "dex")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("dextest: no Dex at %s; run `make dex` to build it from the Go module proxy (or set %s)", bin, BinEnv)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg + "; " + RequireEnv + "=1 makes this a failure")
		}
		t.Skip(msg)
	}
	return bin
}

// Client returns the configured client with that ID; it fails t when
// there is none.
func (d *Dex) Client(t testing.TB, id string) Client {
	t.Helper()
	for _, c := range d.Clients {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("dextest: no client %q", id)
	return Client{}
}

// User returns the configured user with that username or email; it fails
// t when there is none.
func (d *Dex) User(t testing.TB, name string) User {
	t.Helper()
	for _, u := range d.Users {
		if u.Username == name || u.Email == name {
			return u
		}
	}
	t.Fatalf("dextest: no user %q", name)
	return User{}
}

// Endpoint returns Dex's authorization and token endpoints.
func (d *Dex) Endpoint() oauth2.Endpoint {
	return oauth2.Endpoint{
		AuthURL:   d.Issuer + "/auth",
		TokenURL:  d.Issuer + "/token",
		AuthStyle: oauth2.AuthStyleInHeader,
	}
}

// OAuth2Config returns the configuration of the client with that ID, with
// its first redirect URI, asking for scopes.
func (d *Dex) OAuth2Config(t testing.TB, clientID string, scopes ...string) *oauth2.Config {
	t.Helper()
	c := d.Client(t, clientID)
	conf := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, Endpoint: d.Endpoint(), Scopes: scopes}
	if len(c.RedirectURIs) > 0 {
		conf.RedirectURL = c.RedirectURIs[0]
	}
	return conf
}

// Context returns ctx carrying HTTPClient for golang.org/x/oauth2 and
// github.com/coreos/go-oidc, so that they trust Dex's CA.
func (d *Dex) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, d.HTTPClient)
}

// config renders Dex's configuration as JSON, which is YAML too.
func config(issuer string, port int, certFile, keyFile string, opts Options) ([]byte, error) {
	web := map[string]any{}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if certFile != "" {
		web["https"], web["tlsCert"], web["tlsKey"] = addr, certFile, keyFile
	} else {
		web["http"] = addr
	}
	var clients []map[string]any
	for _, c := range opts.Clients {
		client := map[string]any{"id": c.ID, "name": c.ID, "redirectURIs": c.RedirectURIs}
		if c.Public {
			client["public"] = true
		} else {
			client["secret"] = c.Secret
		}
		clients = append(clients, client)
	}
	var users []map[string]any
	for _, u := range opts.Users {
		hash, err := hashPassword(u.Password)
		if err != nil {
			return nil, fmt.Errorf("hash the password of %s: %w", u.Username, err)
		}
		users = append(users, map[string]any{"email": u.Email, "username": u.Username, "userID": u.UserID, "hash": hash})
	}
	cfg := map[string]any{
		"issuer":  issuer,
		"storage": map[string]any{"type": "memory"},
		"web":     web,
		"logger":  map[string]any{"level": "info"},
		"oauth2": map[string]any{
			"passwordConnector":  "local",
			"skipApprovalScreen": true,
			"grantTypes": []string{"authorization_code", "refresh_token", "password",
				"urn:ietf:params:oauth:grant-type:token-exchange"},
		},
		"enablePasswordDB": true,
		"staticPasswords":  users,
		"staticClients":    clients,
	}
	var connectors []map[string]any
	for _, tr := range opts.Trusts {
		if tr.Upstream == nil || tr.ConnectorID == "" {
			return nil, fmt.Errorf("trust %q: a connector ID and an upstream Dex are required", tr.ConnectorID)
		}
		clientID := tr.ClientID
		if clientID == "" {
			clientID = ClientMusterd
		}
		var client *Client
		for i := range tr.Upstream.Clients {
			if tr.Upstream.Clients[i].ID == clientID {
				client = &tr.Upstream.Clients[i]
			}
		}
		if client == nil {
			return nil, fmt.Errorf("trust %q: the upstream Dex has no client %q", tr.ConnectorID, clientID)
		}
		conn := map[string]any{"issuer": tr.Upstream.Issuer, "clientID": client.ID, "clientSecret": client.Secret,
			"redirectURI": issuer + "/callback", "scopes": []string{"openid", "profile", "email", "groups"}}
		if tr.Upstream.CAFile != "" {
			conn["rootCAs"] = []string{tr.Upstream.CAFile}
		}
		connectors = append(connectors, map[string]any{"type": "oidc", "id": tr.ConnectorID, "name": tr.ConnectorID, "config": conn})
	}
	if len(connectors) > 0 {
		cfg["connectors"] = connectors
	}
	if opts.IDTokenExpiry > 0 {
		cfg["expiry"] = map[string]any{"idTokens": opts.IDTokenExpiry.String()}
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// hashes caches the bcrypt hash of each password for the test binary's
// life: Dex refuses at login a hash cheaper than bcrypt's default cost, and
// one such hash takes most of a second under the race detector.
var hashes sync.Map // password -> hash

func hashPassword(password string) (string, error) {
	if h, ok := hashes.Load(password); ok {
		return h.(string), nil
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	hashes.Store(password, string(hash))
	return string(hash), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
