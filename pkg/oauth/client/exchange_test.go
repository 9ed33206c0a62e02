package client_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/pkg/oauth/client"
)

// exchangeRig is two real Dexes, the second trusting the first through
// its OIDC connector "cluster-a", and an Exchanger reaching the second
// with a counter of its token requests and a clock that can be moved.
type exchangeRig struct {
	a, b  *dextest.Dex
	x     client.Exchange
	ex    *client.Exchanger
	posts atomic.Int64
	skew  atomic.Int64
	logs  *logtest.Buffer
}

func newExchangeRig(t *testing.T) *exchangeRig {
	t.Helper()
	r := &exchangeRig{logs: &logtest.Buffer{}}
	r.a = dextest.Start(t, dextest.Options{TLS: true})
	r.b = dextest.Start(t, dextest.Options{TLS: true, IDTokenExpiry: 10 * time.Minute,
		Trusts:  []dextest.Trust{{ConnectorID: "cluster-a", Upstream: r.a}},
		Clients: []dextest.Client{{ID: "musterd-b", Public: true}, {ID: "private", Secret: "private-secret"}}})
	r.x = client.Exchange{Endpoint: r.b.Issuer + "/token", ConnectorID: "cluster-a", ClientID: "musterd-b"}
	r.ex = client.NewExchanger(client.ExchangerOptions{
		HTTPClient: &http.Client{Timeout: 30 * time.Second, Transport: countTokenPosts{r.b.HTTPClient.Transport, &r.posts, new(atomic.Pointer[url.Values])}},
		Now:        func() time.Time { return time.Now().Add(time.Duration(r.skew.Load())) },
		Logger:     slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	return r
}

// verifyAtB checks tok is an ID token of the second Dex's for client,
// and returns its email.
func (r *exchangeRig) verifyAtB(t *testing.T, tok, client string) string {
	t.Helper()
	ctx := r.b.Context(t.Context())
	provider, err := oidc.NewProvider(ctx, r.b.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	id, err := provider.Verifier(&oidc.Config{ClientID: client}).Verify(ctx, tok)
	if err != nil {
		t.Fatalf("the exchanged token is no ID token of the second Dex's for %s: %v", client, err)
	}
	var c struct {
		Email string `json:"email"`
	}
	if err := id.Claims(&c); err != nil {
		t.Fatal(err)
	}
	return c.Email
}

// A user's ID token of the first Dex, traded at the second as a public
// client or with a secret, gives a token of the second's for that user,
// with its expiry; the subject token never reaches the log.
func TestExchangeTradesTheUsersIDTokenForTheOtherProvidersToken(t *testing.T) {
	r := newExchangeRig(t)
	for _, user := range []string{"alice", "bob"} {
		idToken, _, _ := r.a.PasswordLogin(t, user)
		tok, err := r.ex.Exchange(t.Context(), r.x, idToken)
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if typ := tok.Extra("issued_token_type"); typ != "urn:ietf:params:oauth:token-type:id_token" {
			t.Errorf("%s: issued %v, want an ID token, as muster asks", user, typ)
		}
		if got := r.verifyAtB(t, tok.AccessToken, "musterd-b"); got != user+"@example.com" {
			t.Errorf("%s: the exchanged token is %s's", user, got)
		}
		if until := time.Until(tok.Expiry); until < 9*time.Minute || until > 11*time.Minute {
			t.Errorf("%s: expiry in %v, want Dex's 10 minutes", user, until)
		}
		if strings.Contains(r.logs.String(), idToken) || strings.Contains(r.logs.String(), tok.AccessToken) {
			t.Error("a token in the log")
		}
	}

	private := r.x
	private.ClientID, private.ClientSecret = "private", "private-secret"
	idToken, _, _ := r.a.PasswordLogin(t, "alice")
	tok, err := r.ex.Exchange(t.Context(), private, idToken)
	if err != nil {
		t.Fatalf("with a client secret: %v", err)
	}
	r.verifyAtB(t, tok.AccessToken, "private")
	private.ClientSecret = "wrong"
	if _, err := r.ex.Exchange(t.Context(), private, idToken); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("a wrong client secret: %v, want invalid_client", err)
	}
}

// A token that comes back from another issuer than the one expected is
// refused, saying both; the issuer derived from the endpoint is the
// provider's own.
func TestExchangeRefusesATokenOfAnotherIssuer(t *testing.T) {
	r := newExchangeRig(t)
	if got := r.x.Issuer(); got != r.b.Issuer {
		t.Errorf("the issuer derived from %s is %q, want %q", r.x.Endpoint, got, r.b.Issuer)
	}
	idToken, _, _ := r.a.PasswordLogin(t, "alice")
	wrong := r.x
	wrong.ExpectedIssuer = "https://dex.cluster-b.example.com"
	tok, err := r.ex.Exchange(t.Context(), wrong, idToken)
	if !errors.Is(err, client.ErrIssuerMismatch) {
		t.Fatalf("got %v, %v: want ErrIssuerMismatch", tok, err)
	}
	for _, want := range []string{`"` + r.b.Issuer + `"`, `"https://dex.cluster-b.example.com"`, "expectedIssuer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %s", err, want)
		}
	}
	right := r.x
	right.ExpectedIssuer = r.b.Issuer + "/"
	if _, err := r.ex.Exchange(t.Context(), right, idToken); err != nil {
		t.Errorf("the right issuer with a trailing slash: %v", err)
	}
}

// A subject token the provider does not take is refused with the
// provider's answer: one of a provider it does not trust, a forged one,
// none at all, and one through a connector it lacks.
func TestExchangeRefusesABadSubjectToken(t *testing.T) {
	r := newExchangeRig(t)
	stranger := dextest.Start(t, dextest.Options{TLS: true})
	foreign, _, _ := stranger.PasswordLogin(t, "alice")
	own, _, _ := r.a.PasswordLogin(t, "alice")
	for why, subject := range map[string]string{
		"another provider's": foreign,
		"a forged one":       own[:len(own)-8] + "AAAAAAAA",
		"a string":           "not-a-token",
	} {
		if _, err := r.ex.Exchange(t.Context(), r.x, subject); err == nil || !strings.Contains(err.Error(), "access_denied") {
			t.Errorf("%s: %v, want Dex's access_denied", why, err)
		}
	}
	if _, err := r.ex.Exchange(t.Context(), r.x, ""); err == nil {
		t.Error("no subject token was exchanged")
	}
	noConnector := r.x
	noConnector.ConnectorID = "cluster-z"
	if _, err := r.ex.Exchange(t.Context(), noConnector, own); err == nil || !strings.Contains(err.Error(), "invalid_request") {
		t.Errorf("an unknown connector: %v, want invalid_request", err)
	}
	if strings.Contains(r.logs.String(), own) {
		t.Error("the subject token in the log")
	}
}

// A user's exchanged token is kept until EarlyExpiry before it expires,
// per user and server: a second request, the same user's, costs no
// exchange; another user's or another server's does; once due, or once
// a server refused it, it is traded anew.
func TestExchangedTokensAreKeptUntilTheyAreDue(t *testing.T) {
	r := newExchangeRig(t)
	subjects := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		subjects[user], _, _ = r.a.PasswordLogin(t, user)
	}
	source := func(user, server string) *client.ExchangeSource {
		return r.ex.TokenSource("user:"+user, server, r.x, func() (string, error) { return subjects[user], nil })
	}
	first, err := source("alice", "k8s").Token()
	if err != nil {
		t.Fatal(err)
	}
	again, err := source("alice", "k8s").Token()
	if err != nil {
		t.Fatal(err)
	}
	if again.AccessToken != first.AccessToken || r.posts.Load() != 1 {
		t.Errorf("the second request made %d exchanges in all and got another token: want the kept one", r.posts.Load())
	}
	bobs, err := source("bob", "k8s").Token()
	if err != nil {
		t.Fatal(err)
	}
	if r.verifyAtB(t, bobs.AccessToken, "musterd-b") != "bob@example.com" || r.posts.Load() != 2 {
		t.Errorf("bob got alice's token, or no exchange of his own (%d in all)", r.posts.Load())
	}
	if _, err := source("alice", "other").Token(); err != nil || r.posts.Load() != 3 {
		t.Errorf("another server: %v, %d exchanges in all: want one of its own", err, r.posts.Load())
	}

	// Before EarlyExpiry (30 s): kept. Within it: traded anew. (5 s of
	// slack for a slow machine between setting the clock and reading it.)
	r.skew.Store(int64(time.Until(first.Expiry) - 35*time.Second))
	if _, err := source("alice", "k8s").Token(); err != nil || r.posts.Load() != 3 {
		t.Errorf("35 s before expiry: %v, %d exchanges: want the kept token", err, r.posts.Load())
	}
	r.skew.Store(int64(time.Until(first.Expiry) - 25*time.Second))
	due, err := source("alice", "k8s").Token()
	if err != nil || r.posts.Load() != 4 {
		t.Fatalf("25 s before expiry: %v, %d exchanges: want a new one", err, r.posts.Load())
	}
	r.skew.Store(0)

	// A refusal of an older token changes nothing; of the kept one, it
	// gets one new exchange.
	s := source("alice", "k8s")
	s.Refused(first.AccessToken + "-not-the-kept-one")
	if _, err := s.Token(); err != nil || r.posts.Load() != 4 {
		t.Errorf("after a refusal of another token: %v, %d exchanges", err, r.posts.Load())
	}
	s.Refused(due.AccessToken)
	if _, err := s.Token(); err != nil || r.posts.Load() != 5 {
		t.Errorf("after a refusal of the kept token: %v, %d exchanges: want one more", err, r.posts.Load())
	}
	if _, err := s.Token(); err != nil || r.posts.Load() != 5 {
		t.Errorf("after that: %v, %d exchanges: want the new token kept", err, r.posts.Load())
	}

	// A user's token for a server whose exchange settings changed is a
	// new one, and the old is dropped; Forget and ForgetServer drop them.
	if n := r.ex.Kept(); n != 3 {
		t.Errorf("%d tokens kept: want alice's and bob's for k8s, alice's for other", n)
	}
	changed := r.x
	changed.Scopes = "openid email"
	if _, err := r.ex.TokenSource("user:alice", "k8s", changed, func() (string, error) { return subjects["alice"], nil }).Token(); err != nil || r.posts.Load() != 6 {
		t.Errorf("changed settings: %v, %d exchanges: want a new one", err, r.posts.Load())
	}
	if n := r.ex.Kept(); n != 3 {
		t.Errorf("%d tokens kept after alice's settings for k8s changed: want still 3", n)
	}
	r.ex.Forget("user:bob")
	r.ex.ForgetServer("other")
	if n := r.ex.Kept(); n != 1 {
		t.Errorf("%d tokens kept after bob and the server other were forgotten: want alice's for k8s", n)
	}

	// A failed exchange keeps nothing, and says why.
	broken := r.ex.TokenSource("user:carol", "k8s", r.x, func() (string, error) { return "", errors.New("carol has no ID token") })
	if _, err := broken.Token(); err == nil || !strings.Contains(err.Error(), "carol has no ID token") {
		t.Errorf("a user without an ID token: %v", err)
	}
	if bytes.Contains([]byte(r.logs.String()), []byte(subjects["alice"])) {
		t.Error("a subject token in the log")
	}
}
