package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/musterd/musterd/pkg/oauth/store"
)

// KVStore is a Store over a store.Store: in Valkey, sealed with the
// operator's key (store.Encrypted), the users' tokens survive a restart of
// musterd and a login may finish on another replica. A key holds no
// owner, issuer or nonce in the clear: each is hashed, since keys are
// plain text in the store.
type KVStore struct {
	kv store.Store
}

// NewKVStore returns a Store over kv.
func NewKVStore(kv store.Store) *KVStore { return &KVStore{kv: kv} }

// storedToken and storedState are Token and State as they are kept: the
// secrets as plain strings, which the store seals, and never in any other
// JSON of musterd's.
type storedToken struct {
	AccessToken  string    `json:"a"`
	RefreshToken string    `json:"r,omitempty"`
	TokenType    string    `json:"t,omitempty"`
	Expiry       time.Time `json:"e"`
	Scopes       []string  `json:"s,omitempty"`
	ClientID     string    `json:"c,omitempty"`
}

type storedState struct {
	Owner     string    `json:"o"`
	Server    string    `json:"s"`
	ServerURL string    `json:"u"`
	Issuer    string    `json:"i"`
	ClientID  string    `json:"c"`
	Verifier  string    `json:"v"`
	Scopes    []string  `json:"sc,omitempty"`
	AuthURL   string    `json:"a"`
	Expires   time.Time `json:"e"`
}

func hashed(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func tokenKey(owner, issuer string) string { return "token:" + hashed(owner, issuer) }
func stateKey(nonce string) string         { return "state:" + hashed(nonce) }

func (s *KVStore) PutToken(ctx context.Context, owner, issuer string, t Token) error {
	data, err := json.Marshal(storedToken{AccessToken: t.AccessToken.Reveal(), RefreshToken: t.RefreshToken.Reveal(),
		TokenType: t.TokenType, Expiry: t.Expiry, Scopes: t.Scopes, ClientID: t.ClientID})
	if err != nil {
		return err
	}
	return s.kv.Put(ctx, tokenKey(owner, issuer), data, 0)
}

func (s *KVStore) Token(ctx context.Context, owner, issuer string) (Token, bool, error) {
	data, ok, err := s.kv.Get(ctx, tokenKey(owner, issuer))
	if err != nil || !ok {
		return Token{}, false, err
	}
	var st storedToken
	if err := json.Unmarshal(data, &st); err != nil {
		return Token{}, false, fmt.Errorf("a stored token does not decode: %w", err)
	}
	return Token{AccessToken: Secret(st.AccessToken), RefreshToken: Secret(st.RefreshToken), TokenType: st.TokenType,
		Expiry: st.Expiry, Scopes: st.Scopes, ClientID: st.ClientID}, true, nil
}

func (s *KVStore) DeleteToken(ctx context.Context, owner, issuer string) error {
	return s.kv.Delete(ctx, tokenKey(owner, issuer))
}

func (s *KVStore) PutState(ctx context.Context, nonce string, st State) error {
	data, err := json.Marshal(storedState{Owner: st.Owner, Server: st.Server, ServerURL: st.ServerURL, Issuer: st.Issuer,
		ClientID: st.ClientID, Verifier: st.Verifier.Reveal(), Scopes: st.Scopes, AuthURL: st.AuthURL, Expires: st.Expires})
	if err != nil {
		return err
	}
	// The store drops it at its expiry by the wall clock; reads judge it
	// by the client's clock (now), which a test may move.
	ttl := max(time.Until(st.Expires), time.Minute)
	return s.kv.Put(ctx, stateKey(nonce), data, ttl)
}

func (s *KVStore) State(ctx context.Context, nonce string, now time.Time) (State, bool, error) {
	data, ok, err := s.kv.Get(ctx, stateKey(nonce))
	return decodeState(data, ok, err, now)
}

func (s *KVStore) TakeState(ctx context.Context, nonce string, now time.Time) (State, bool, error) {
	data, ok, err := s.kv.Take(ctx, stateKey(nonce))
	return decodeState(data, ok, err, now)
}

func decodeState(data []byte, ok bool, err error, now time.Time) (State, bool, error) {
	if err != nil || !ok {
		return State{}, false, err
	}
	var st storedState
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, false, fmt.Errorf("a stored login state does not decode: %w", err)
	}
	if !now.Before(st.Expires) {
		return State{}, false, nil
	}
	return State{Owner: st.Owner, Server: st.Server, ServerURL: st.ServerURL, Issuer: st.Issuer, ClientID: st.ClientID,
		Verifier: Secret(st.Verifier), Scopes: st.Scopes, AuthURL: st.AuthURL, Expires: st.Expires}, true, nil
}
