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
	"github.com/musterd/musterd/pkg/oauth/verify"
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

// ssoFirstWait bounds how long a user's first request waits for their
// connections to the forwarding servers (muster's initSSOTimeout): as
// muster does, a new user's connections are opened before their first
// request is served, so that a client that lists its tools once, at
// start, sees them. As muster does too, only a JWT is forwarded, never a
// token that is no JWT (an opaque access token only its provider can make
// sense of).
const ssoFirstWait = 15 * time.Second

// sso keeps each user's latest token and their connections to the
// forwarding servers.
type sso struct {
	d   *daemon
	log *slog.Logger

	// firsts are the attempts begun at an owner's first request, which
	// that request (and any other of the owner's meanwhile) waits for:
	// each channel is closed when its attempt is over. Under mu.
	firsts map[ssoTarget]chan struct{}

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
	return &sso{d: d, log: log, tokens: map[string]string{}, tried: map[ssoTarget]time.Time{}, inflight: map[ssoTarget]context.CancelFunc{},
		firsts: map[ssoTarget]chan struct{}{}}
}

// authenticator wraps inner: a user it lets in is seen, with the token
// the request carried when that is a JWT; a token that is no JWT is never
// passed on.
func (s *sso) authenticator(inner identity.Authenticator) identity.Authenticator {
	return ssoAuthenticator{inner: inner, seen: s.seen}
}

type ssoAuthenticator struct {
	inner identity.Authenticator
	seen  func(who identity.Identity, token string)
}

// forwardingAuthenticator says, beside who the caller is, which token a
// forwarding server gets for them when it is not the one presented: for
// a token of musterd's own authorization server, the user's ID token
// from the identity provider (authserver.Authenticator).
type forwardingAuthenticator interface {
	AuthenticateForwarding(r *http.Request) (identity.Identity, string, *identity.Challenge)
}

func (a ssoAuthenticator) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	if f, ok := a.inner.(forwardingAuthenticator); ok {
		who, token, challenge := f.AuthenticateForwarding(r)
		// A login's ID token, which musterd passes on, is kept whatever
		// it is; a token the caller presented only when it is a JWT, as
		// below.
		_, presented, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if challenge == nil && who.Subject != "" && (token != strings.TrimSpace(presented) || verify.IsJWT(token)) {
			a.seen(who, token)
		}
		return who, challenge
	}
	who, challenge := a.inner.Authenticate(r)
	if challenge == nil && who.Subject != "" {
		_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if token = strings.TrimSpace(token); verify.IsJWT(token) {
			a.seen(who, token)
		}
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
	var wait []chan struct{}
	s.mu.Lock()
	_, known := s.tokens[owner]
	if s.tokens[owner] != token {
		s.retryOwner(owner) // what failed with the old token may work with the new
	}
	s.tokens[owner] = token
	for _, key := range forwarding {
		t := ssoTarget{owner: owner, key: key}
		if _, connected := s.d.Supervisor.UserConnection(key, owner); connected {
			continue
		}
		if done, first := s.firsts[t]; first {
			wait = append(wait, done)
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
		if !known {
			s.firsts[t] = make(chan struct{})
			wait = append(wait, s.firsts[t])
		}
		go s.connect(ctx, t)
	}
	s.mu.Unlock()
	s.waitFor(wait)
}

// waitFor waits until each of done is closed, or ssoFirstWait has passed.
func (s *sso) waitFor(done []chan struct{}) {
	if len(done) == 0 {
		return
	}
	deadline := time.NewTimer(ssoFirstWait)
	defer deadline.Stop()
	for _, d := range done {
		select {
		case <-d:
		case <-deadline.C:
			return
		}
	}
}

// connect opens t's connection with the owner's latest token.
func (s *sso) connect(ctx context.Context, t ssoTarget) {
	defer func() {
		s.mu.Lock()
		s.inflight[t]()
		delete(s.inflight, t)
		if done, first := s.firsts[t]; first {
			close(done)
			delete(s.firsts, t)
		}
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
