package client

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/redistest"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// The users' tokens and pending logins kept in a real Redis, sealed: what
// one client stored, another (a restarted musterd) reads; states are
// single use and expire by the reader's clock; keys name no owner, issuer
// or nonce, and the values hold no token or verifier.
func TestTheKVStoreKeepsTokensAndLoginsSealedInRedis(t *testing.T) {
	r := redistest.Start(t)
	key := make([]byte, store.KeySize)
	_, _ = rand.Read(key)
	open := func() *KVStore {
		kv, err := store.NewValkey(t.Context(), store.ValkeyOptions{URL: r.URL()})
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := store.Encrypted(kv, key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sealed.Close() })
		return NewKVStore(sealed)
	}
	ctx := t.Context()
	const owner, issuer, access, refresh, verifier, nonce = "user:https://idp|alice", "https://idp", "access-t0ken-value", "refresh-t0ken-value", "pkce-verifier-value", "nonce-value"
	first := open()
	expiry := time.Now().Add(time.Hour).Round(0)
	if err := first.PutToken(ctx, owner, issuer, Token{AccessToken: access, RefreshToken: refresh, TokenType: "Bearer", Expiry: expiry, Scopes: []string{"openid"}, ClientID: "musterd"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := first.PutState(ctx, nonce, State{Owner: owner, Server: "jira", Issuer: issuer, Verifier: verifier, Expires: now.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}

	again := open() // musterd restarted
	tok, ok, err := again.Token(ctx, owner, issuer)
	if err != nil || !ok || tok.AccessToken.Reveal() != access || tok.RefreshToken.Reveal() != refresh || !tok.Expiry.Equal(expiry) || tok.ClientID != "musterd" {
		t.Fatalf("after a restart: %v %v %v", tok, ok, err)
	}
	if _, ok, _ := again.Token(ctx, "user:https://idp|bob", issuer); ok {
		t.Error("bob has alice's token")
	}
	if _, ok, _ := again.State(ctx, nonce, now.Add(10*time.Minute)); ok {
		t.Error("a state read at its expiry")
	}
	st, ok, err := again.TakeState(ctx, nonce, now)
	if err != nil || !ok || st.Verifier.Reveal() != verifier || st.Owner != owner {
		t.Fatalf("take: %v %v %v", st, ok, err)
	}
	if _, ok, _ := again.TakeState(ctx, nonce, now); ok {
		t.Error("a state taken twice")
	}

	// The same keys read without the seal, as anyone with the store's
	// password but not its key would.
	raw, err := store.NewValkey(ctx, store.ValkeyOptions{URL: r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := first.PutState(ctx, "another-"+nonce, State{Owner: owner, Verifier: verifier, Expires: now.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	keys, err := raw.Keys(ctx, "")
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %q, %v: want the token's and a state's", keys, err)
	}
	for _, k := range keys {
		for _, private := range []string{"alice", "idp", nonce} {
			if strings.Contains(k, private) {
				t.Errorf("key %s names %s", k, private)
			}
		}
		value, _, err := raw.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{access, refresh, verifier} {
			if bytes.Contains(value, []byte(secret)) {
				t.Errorf("%s holds %s in the clear", k, secret)
			}
		}
	}
	if err := again.DeleteToken(ctx, owner, issuer); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := first.Token(ctx, owner, issuer); ok {
		t.Error("a deleted token is still there")
	}
}
