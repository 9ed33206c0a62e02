package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/events"
	oauthclient "github.com/musterd/musterd/pkg/oauth/client"
	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
	"github.com/musterd/musterd/pkg/oauth/store"
	"github.com/musterd/musterd/pkg/supervisor"
)

// The users' logins to protected servers, wired: core_auth_login and
// core_auth_logout (package coretools) drive them through logins, which
// holds the users' tokens in package oauth/client and their own
// connections in the supervisor; the catalogue shows each user the tools
// of their own connections, and the router tells that user's sessions
// alone when they change.

// logins is coretools.Logins over the daemon's parts.
type logins struct {
	client *oauthclient.Client // nil: aggregator.oauth.mcpClient is off
	d      *daemon
	log    *slog.Logger

	mu      sync.Mutex
	issuers map[string]map[string]bool // owner → the issuers it logged in at
}

var _ coretools.Logins = (*logins)(nil)

// newLogins makes the OAuth client of mcpClient when it is enabled, its
// users' tokens kept where the server's storage says.
func newLogins(d *daemon, oauth oauthconfig.Config, outbound *http.Transport, log *slog.Logger) (*logins, error) {
	l := &logins{d: d, log: log, issuers: map[string]map[string]bool{}}
	mcpClient := oauth.MCPClient
	if !mcpClient.Enabled {
		return l, nil
	}
	tokens, err := tokenStore(oauth.Server, outbound)
	if err != nil {
		return nil, err
	}
	c, err := oauthclient.New(oauthclient.Options{
		Store:        tokens,
		PublicURL:    mcpClient.PublicURL,
		CallbackPath: mcpClient.CallbackPath,
		CIMDPath:     mcpClient.CIMD.Path,
		ClientID:     mcpClient.ClientID,
		HTTPClient:   &http.Client{Transport: outbound, Timeout: 30 * time.Second},
		Logger:       log,
		OnLogin:      l.loggedIn,
		// A server naming another authorization server (SEP-2352): its
		// users' connections, made with the old one's tokens, end, and
		// their next core_auth_login logs them in at the new one.
		OnIssuerChange: l.issuerChanged,
	})
	if err != nil {
		return nil, err
	}
	l.client = c
	return l, nil
}

// loggedIn notes an owner's new token: its issuer is forgotten with the
// owner. The user connects at their next core_auth_login, as in muster.
func (l *logins) loggedIn(login oauthclient.Login) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.issuers[login.Owner] == nil {
		l.issuers[login.Owner] = map[string]bool{}
	}
	l.issuers[login.Owner][login.Issuer] = true
}

func (l *logins) Enabled() bool { return l.client != nil }

func (l *logins) Connected(owner string, key events.Key) bool {
	_, ok := l.d.Supervisor.UserConnection(key, owner)
	return ok
}

// server is what the OAuth client knows of s.
func server(s coretools.LoginServer) oauthclient.Server {
	out := oauthclient.Server{Name: s.Key.Name, URL: s.URL}
	if s.Auth != nil && s.Auth.AuthorizationServer != nil {
		out.Issuer = s.Auth.AuthorizationServer.Issuer
		out.Scopes = strings.Fields(s.Auth.AuthorizationServer.Scopes)
	}
	return out
}

func (l *logins) Issuer(ctx context.Context, s coretools.LoginServer) (string, string, error) {
	issuer, err := l.client.Issuer(ctx, server(s))
	return issuer, "", err
}

func (l *logins) Connect(ctx context.Context, owner string, s coretools.LoginServer, issuer string) (coretools.Offered, error) {
	tokens, ok := l.client.TokenSource(owner, issuer)
	if !ok {
		return coretools.Offered{}, coretools.ErrNoToken
	}
	conn, err := l.d.Supervisor.ConnectAs(ctx, s.Key, owner, tokens)
	if _, refused := errors.AsType[*supervisor.AuthRequiredError](err); refused {
		l.client.Forget(owner, issuer)
		return coretools.Offered{}, coretools.ErrTokenRefused
	}
	if err != nil {
		return coretools.Offered{}, err
	}
	return coretools.Offered{Tools: len(conn.Tools)}, nil
}

func (l *logins) Begin(ctx context.Context, owner string, s coretools.LoginServer, issuer, scope string) (string, error) {
	// The issuer is found again (cached) rather than pinned: a pinned
	// issuer skips the server's metadata, and with it the scopes the
	// server asks for.
	target := server(s)
	target.Scope = scope
	return l.client.Begin(ctx, owner, target)
}

// Logout ends owner's connection to s, and drops its token for s's
// issuer unless another of its connections is to a server of that issuer.
func (l *logins) Logout(ctx context.Context, owner string, s coretools.LoginServer) error {
	l.d.Supervisor.DisconnectAs(ctx, s.Key, owner)
	if l.client == nil {
		return nil
	}
	issuer, err := l.client.Issuer(ctx, server(s))
	if err != nil || issuer == "" {
		return nil // no issuer, no token of it
	}
	for _, other := range l.d.Catalogue.OwnerServers(owner) {
		if other == s.Key.Canonical() {
			continue
		}
		declared, ok := l.d.Index.Get(other)
		spec, isServer := declared.Object.(*v1alpha1.MCPServer)
		if !ok || !isServer || spec == nil {
			continue
		}
		ls := coretools.LoginServer{Key: other, URL: spec.Spec.URL, Auth: spec.Spec.Auth}
		if otherIssuer, err := l.client.Issuer(ctx, server(ls)); err == nil && otherIssuer == issuer {
			return nil
		}
	}
	l.client.Forget(owner, issuer)
	return nil
}

// ownerGone drops what was kept for an owner whose last MCP session
// closed, when the owner is that session (no user): its connections, its
// tools and its tokens. A user's stay for the user's next session.
func (l *logins) ownerGone(owner string) {
	if !strings.HasPrefix(owner, "session:") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, key := range l.d.Catalogue.OwnerServers(owner) {
		l.d.Supervisor.DisconnectAs(ctx, key, owner)
	}
	l.d.Catalogue.ForgetOwner(owner)
	l.mu.Lock()
	issuers := l.issuers[owner]
	delete(l.issuers, owner)
	l.mu.Unlock()
	if l.client != nil {
		for issuer := range issuers {
			l.client.Forget(owner, issuer)
		}
	}
}

// loginPaths are the OAuth client's paths, for the mux; none when it is
// off.
func (l *logins) paths() []string {
	if l.client == nil {
		return nil
	}
	return slices.Clone(l.client.Paths())
}

// tokenStore is where the users' tokens and pending logins are kept:
// memory, or with storage.type valkey the Valkey it names (sealedStore).
func tokenStore(srv oauthconfig.Server, outbound *http.Transport) (oauthclient.Store, error) {
	if srv.Storage.Type != oauthconfig.StorageValkey {
		return oauthclient.NewMemoryStore(), nil
	}
	sealed, err := sealedStore(srv, outbound)
	if err != nil {
		return nil, err
	}
	return oauthclient.NewKVStore(sealed), nil
}

// sealedStore is the Valkey of storage.type valkey, every value sealed
// with encryptionKey, which it then requires. A Valkey that cannot be
// reached stops the start: tokens are never kept in memory instead.
func sealedStore(srv oauthconfig.Server, outbound *http.Transport) (store.Store, error) {
	key := srv.EncryptionKeyBytes()
	if key == nil {
		return nil, errors.New("aggregator.oauth.server.storage: valkey needs aggregator.oauth.server.encryptionKey (or encryptionKeyFile): the tokens are kept sealed with it")
	}
	v := srv.Storage.Valkey
	opts := store.ValkeyOptions{URL: v.URL, Password: v.Password.Reveal(), DB: v.DB, KeyPrefix: v.KeyPrefix}
	if v.TLSEnabled {
		opts.TLS = &tls.Config{ServerName: v.TLSServerName, MinVersion: tls.VersionTLS12}
		if outbound.TLSClientConfig != nil {
			opts.TLS.RootCAs = outbound.TLSClientConfig.RootCAs // -extra-ca-file's
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := store.NewValkey(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("aggregator.oauth.server.storage.valkey: %w", err)
	}
	sealed, err := store.Encrypted(kv, key)
	if err != nil {
		_ = kv.Close()
		return nil, fmt.Errorf("aggregator.oauth.server.encryptionKey: %w", err)
	}
	return sealed, nil
}

// issuerChanged ends the users' own connections to the servers named
// server, whose authorization server is no longer old.
func (l *logins) issuerChanged(server, old, _ string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, key := range l.d.Index.Named(v1alpha1.KindMCPServer, server) {
		for _, conn := range l.d.Supervisor.UserConnections(key) {
			l.d.Supervisor.DisconnectAs(ctx, key, conn.Owner)
		}
		l.log.Info("a protected server names another authorization server: its users' own connections ended",
			"key", key.String(), "previous", old)
	}
}
