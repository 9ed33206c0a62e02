package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A state is taken once, however many race for it, and is gone at its
// expiry to the instant; reading it (the start URL) does not consume it.
func TestMemoryStoreStatesAreSingleUseAndExpire(t *testing.T) {
	m := NewMemoryStore()
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	ctx := t.Context()
	if err := m.PutState(ctx, "n1", State{Owner: "user:alice", Expires: t0.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.State(ctx, "n1", t0); !ok {
		t.Fatal("a live state is not there")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 16 {
		wg.Go(func() {
			if st, ok, _ := m.TakeState(ctx, "n1", t0.Add(time.Minute)); ok && st.Owner == "user:alice" {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d takes of one state won, want 1", wins)
	}

	_ = m.PutState(ctx, "n2", State{Expires: t0.Add(10 * time.Minute)})
	if _, ok, _ := m.TakeState(ctx, "n2", t0.Add(10*time.Minute)); ok {
		t.Error("a state was taken at its expiry")
	}
	_ = m.PutState(ctx, "n3", State{Expires: t0.Add(10 * time.Minute)})
	_ = m.PutState(ctx, "n4", State{Expires: t0.Add(20 * time.Minute)})
	m.Sweep(t0.Add(15 * time.Minute))
	if len(m.states) != 1 {
		t.Errorf("after the sweep %d states, want the live one", len(m.states))
	}

	// Tokens are per (owner, issuer), and a caller's slice is its own.
	scopes := []string{"read"}
	_ = m.PutToken(ctx, "user:alice", "https://a", Token{AccessToken: "x", Scopes: scopes})
	scopes[0] = "changed"
	if tok, ok, _ := m.Token(ctx, "user:alice", "https://a"); !ok || tok.Scopes[0] != "read" {
		t.Errorf("stored %v %v", tok, ok)
	}
	for _, k := range [][2]string{{"user:bob", "https://a"}, {"user:alice", "https://b"}} {
		if _, ok, _ := m.Token(ctx, k[0], k[1]); ok {
			t.Errorf("%v has alice's token", k)
		}
	}
}

// A token is sent as stored until EarlyExpiry before its expiry, to the
// instant, then refreshed; one that cannot be is forgotten and the user
// must log in again. Virtual time: no provider is asked before then.
func TestATokenIsFreshUntilEarlyExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore()
		c, err := New(Options{PublicURL: "http://127.0.0.1:8090", ClientID: "musterd", Store: store,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		expiry := time.Now().Add(time.Hour)
		_ = store.PutToken(t.Context(), "user:alice", "https://idp", Token{AccessToken: "at-1", Expiry: expiry, ClientID: "musterd"})
		ts, ok := c.TokenSource("user:alice", "https://idp")
		if !ok {
			t.Fatal("no source")
		}
		time.Sleep(time.Hour - 30*time.Second - time.Nanosecond)
		if tok, err := ts.Token(); err != nil || tok.AccessToken != "at-1" {
			t.Fatalf("just before EarlyExpiry: %v %v", tok, err)
		}
		time.Sleep(time.Nanosecond)
		if _, err := ts.Token(); !errors.Is(err, ErrLoginRequired) {
			t.Fatalf("at EarlyExpiry without a refresh token: %v, want ErrLoginRequired", err)
		}
		if _, ok := c.TokenSource("user:alice", "https://idp"); ok {
			t.Error("a token that cannot be refreshed was kept")
		}

		// A token without expiry never expires; Invalidate still makes it
		// due, and without a refresh token that is a login required.
		_ = store.PutToken(t.Context(), "user:alice", "https://idp", Token{AccessToken: "at-2", ClientID: "musterd"})
		time.Sleep(1000 * time.Hour)
		if tok, err := ts.Token(); err != nil || tok.AccessToken != "at-2" {
			t.Fatalf("a token without expiry: %v %v", tok, err)
		}
		c.Invalidate("user:alice", "https://idp")
		if _, err := ts.Token(); !errors.Is(err, ErrLoginRequired) {
			t.Errorf("after Invalidate: %v", err)
		}
	})
}

// The types that hold a secret never print it: any verb, slog's
// handlers.
func TestSecretsNeverPrint(t *testing.T) {
	tok := Token{AccessToken: "access-SECRET", RefreshToken: "refresh-SECRET", TokenType: "Bearer", Scopes: []string{"read"}, ClientID: "musterd"}
	st := State{Owner: "user:alice", Verifier: "verifier-SECRET", Issuer: "https://idp"}
	var buf bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&buf, verb+" "+verb+" "+verb+" "+verb+"\n", tok, st, tok.AccessToken, &tok)
	}
	fmt.Fprint(&buf, tok, st, Secret("plain-SECRET"))
	encoded, err := json.Marshal(map[string]any{"token": tok, "state": st})
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(encoded)
	fmt.Fprintln(&buf, []any{tok, st}, map[string]Token{"k": tok})
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		slog.New(h).Info("m", "token", tok, "state", st, "secret", tok.RefreshToken, "ptr", &tok)
	}
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("a secret printed:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), redacted) || !strings.Contains(buf.String(), "user:alice") {
		t.Errorf("the output lost what is not secret:\n%s", buf.String())
	}
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("m", "state", State{Owner: "session:0123456789abcdef"})
	if strings.Contains(buf.String(), "01234567") || !strings.Contains(buf.String(), "session#") {
		t.Errorf("a session owner's ID is logged, or its owner is not named: %s", buf.String())
	}
	if tok.AccessToken.Reveal() != "access-SECRET" {
		t.Error("Reveal does not give the value")
	}
}

// Options' errors name the option.
func TestNewNamesTheWrongOption(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "PublicURL is required"},
		{Options{PublicURL: "musterd:8090"}, "PublicURL"},
		{Options{PublicURL: "http://x", CallbackPath: "oauth/cb"}, "CallbackPath"},
		{Options{PublicURL: "http://x", CallbackPath: StartPath}, "CallbackPath"},
		{Options{PublicURL: "http://x", ClientSecret: "s"}, "ClientSecret without ClientID"},
	} {
		if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want %q", tc.opts, err, tc.want)
		}
	}
	c, err := New(Options{PublicURL: "http://127.0.0.1:8090/"})
	if err != nil || c.RedirectURI() != "http://127.0.0.1:8090/oauth/proxy/callback" {
		t.Errorf("defaults: %v %q", err, c.RedirectURI())
	}
}
