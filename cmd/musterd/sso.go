package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
)

// Single sign-on by forwarding: a server whose spec says
// auth.forwardToken gets each user's own token, the one the user presented
// to musterd, on a connection of the user's own. It is opened when the
// user is first seen (an authenticated request) and again at a later
// request when it is gone, with no login of its own; the user's latest
// token is what each request to the server carries, so a user who comes
// back with a fresh token gets going again. A server whose spec says
// auth.tokenExchange is opened the same way, with tokens traded for the
// user's (exchange.go). core_auth_login and core_auth_logout refuse such
// servers, as muster's do.

// ssoRetry bounds how often a user's connection to one server is tried
// again after it could not be opened.
const ssoRetry = 30 * time.Second

// sso keeps each user's latest token and their connections to the
// forwarding servers.
type sso struct {
	d   *daemon
	log *slog.Logger

	mu       sync.Mutex
	tokens   map[string]string                // owner → the token it last presented
	tried    map[ssoTarget]time.Time          // when a connection was last tried
	inflight map[ssoTarget]context.CancelFunc // connections being opened
	failures ssoFailures                      // why the last attempts failed
}

type ssoTarget struct {
	owner string
	key   events.Key
}

func newSSO(d *daemon, log *slog.Logger) *sso {
	return &sso{d: d, log: log, tokens: map[string]string{}, tried: map[ssoTarget]time.Time{}, inflight: map[ssoTarget]context.CancelFunc{}}
}

// authenticator wraps inner: a user it lets in is seen, with the token
// the request carried.
func (s *sso) authenticator(inner identity.Authenticator) identity.Authenticator {
	return ssoAuthenticator{inner: inner, seen: s.seen}
}

type ssoAuthenticator struct {
	inner identity.Authenticator
	seen  func(who identity.Identity, token string)
}

func (a ssoAuthenticator) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	who, challenge := a.inner.Authenticate(r)
	if challenge == nil && who.Subject != "" {
		_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		a.seen(who, strings.TrimSpace(token))
	}
	return who, challenge
}

// seen notes who's token, when a server forwards users' tokens, and opens,
// in the background, who's connection to every forwarding server that has
// none, unless one was tried within ssoRetry.
func (s *sso) seen(who identity.Identity, token string) {
	forwarding := s.servers()
	if len(forwarding) == 0 {
		return // no server takes a user's token: none is kept
	}
	owner := who.Owner()
	now := time.Now()
	var open []ssoTarget
	s.mu.Lock()
	if s.tokens[owner] != token {
		s.retryOwner(owner) // what failed with the old token may work with the new
	}
	s.tokens[owner] = token
	for _, key := range forwarding {
		t := ssoTarget{owner: owner, key: key}
		if _, connected := s.d.Supervisor.UserConnection(key, owner); connected {
			continue
		}
		if _, busy := s.inflight[t]; busy || now.Sub(s.tried[t]) < ssoRetry {
			continue
		}
		s.tried[t] = now
		open = append(open, t)
	}
	for _, t := range open {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.inflight[t] = cancel
		go s.connect(ctx, t)
	}
	s.mu.Unlock()
}

// connect opens t's connection with the owner's latest token.
func (s *sso) connect(ctx context.Context, t ssoTarget) {
	defer func() {
		s.mu.Lock()
		s.inflight[t]()
		delete(s.inflight, t)
		s.mu.Unlock()
	}()
	// Asked at each request: the user's latest token, never a copy.
	src, err := s.source(ctx, t)
	if err == nil {
		_, err = s.d.Supervisor.ConnectAs(ctx, t.key, t.owner, src)
	}
	s.mu.Lock()
	s.failures.note(t, err)
	if err == nil {
		delete(s.tried, t)
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Info("sso: a user's connection to a single sign-on server could not be opened; tried again at a later request",
			"key", t.key.String(), "owner", identity.LogTag(t.owner), "error", err)
	}
}

// servers are the declared remote servers whose spec says
// auth.forwardToken or auth.tokenExchange.
func (s *sso) servers() []events.Key {
	var keys []events.Key
	for _, e := range s.d.Index.List(v1alpha1.KindMCPServer) {
		server, ok := e.Object.(*v1alpha1.MCPServer)
		if ok && server != nil && server.Spec.Type.IsRemote() && server.Spec.Auth != nil && (server.Spec.Auth.ForwardToken || exchanging(server.Spec.Auth)) {
			keys = append(keys, e.Key)
		}
	}
	return keys
}

// tokenOf is an owner's latest token, as a token source.
type tokenOf struct {
	s     *sso
	owner string
}

var errNoForwardedToken = errors.New("the user presented no token to forward")

func (t tokenOf) Token() (*oauth2.Token, error) {
	t.s.mu.Lock()
	token := t.s.tokens[t.owner]
	t.s.mu.Unlock()
	if token == "" {
		return nil, errNoForwardedToken
	}
	return &oauth2.Token{AccessToken: token, TokenType: "Bearer"}, nil
}
