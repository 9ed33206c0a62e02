package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Store keeps the users' tokens for protected servers and the pending
// logins' states. The memory store is the default; one shared by
// several musterd replicas (Valkey) implements the same interface, so a
// callback may land on another replica than the login began on.
type Store interface {
	// PutToken stores t as owner's token for issuer, replacing any.
	PutToken(ctx context.Context, owner, issuer string, t Token) error
	// Token returns owner's token for issuer; ok is false when none.
	Token(ctx context.Context, owner, issuer string) (t Token, ok bool, err error)
	// DeleteToken forgets owner's token for issuer; none is no error.
	DeleteToken(ctx context.Context, owner, issuer string) error

	// PutState stores a pending login's state under its nonce, until
	// st.Expires.
	PutState(ctx context.Context, nonce string, st State) error
	// State returns the state of nonce without consuming it; ok is false
	// when it is unknown, taken or expired at now.
	State(ctx context.Context, nonce string, now time.Time) (st State, ok bool, err error)
	// TakeState returns the state of nonce and removes it, atomically:
	// of two takes of one nonce, at most one gets ok. ok is false when it
	// is unknown, taken or expired at now.
	TakeState(ctx context.Context, nonce string, now time.Time) (st State, ok bool, err error)
}

// State is a pending login to a protected server: who began it, for
// which server and issuer, and what the callback needs to finish it.
type State struct {
	Owner  string
	Server string
	// ServerURL is the protected server's URL, the RFC 8707 resource.
	ServerURL string
	Issuer    string
	// ClientID is the client the login runs as.
	ClientID string
	// Verifier is the PKCE code verifier, sent only with the code.
	Verifier Secret
	// Scopes are the scopes asked for.
	Scopes []string
	// AuthURL is the provider's authorization URL /oauth/proxy/start
	// sends the browser to.
	AuthURL string
	// Expires is when the login may no longer finish.
	Expires time.Time
}

func (s State) String() string {
	return fmt.Sprintf("State{owner %q, server %q, issuer %q, client %q, verifier %s, scopes %q, expires %s}",
		s.Owner, s.Server, s.Issuer, s.ClientID, redacted, s.Scopes, s.Expires.Format(time.RFC3339))
}
func (s State) GoString() string { return s.String() }
func (s State) LogValue() slog.Value {
	return slog.GroupValue(slog.String("owner", ownerLog(s.Owner)), slog.String("server", s.Server), slog.String("issuer", s.Issuer))
}

// MemoryStore is a Store in this process's memory: what musterd holds is
// lost with it, and a login must finish on the replica that began it.
// Expired states are dropped when read and by Sweep.
type MemoryStore struct {
	mu     sync.Mutex
	tokens map[[2]string]Token
	states map[string]State
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tokens: map[[2]string]Token{}, states: map[string]State{}}
}

func (m *MemoryStore) PutToken(_ context.Context, owner, issuer string, t Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Scopes = append([]string(nil), t.Scopes...)
	m.tokens[[2]string{owner, issuer}] = t
	return nil
}

func (m *MemoryStore) Token(_ context.Context, owner, issuer string) (Token, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[[2]string{owner, issuer}]
	t.Scopes = append([]string(nil), t.Scopes...)
	return t, ok, nil
}

func (m *MemoryStore) DeleteToken(_ context.Context, owner, issuer string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, [2]string{owner, issuer})
	return nil
}

func (m *MemoryStore) PutState(_ context.Context, nonce string, st State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states[nonce] = st
	return nil
}

func (m *MemoryStore) State(_ context.Context, nonce string, now time.Time) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live(nonce, now)
}

func (m *MemoryStore) TakeState(_ context.Context, nonce string, now time.Time) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok, err := m.live(nonce, now)
	delete(m.states, nonce)
	return st, ok, err
}

// live returns nonce's state unless it expired, dropping it then.
func (m *MemoryStore) live(nonce string, now time.Time) (State, bool, error) {
	st, ok := m.states[nonce]
	if !ok {
		return State{}, false, nil
	}
	if !now.Before(st.Expires) {
		delete(m.states, nonce)
		return State{}, false, nil
	}
	return st, true, nil
}

// Sweep drops the states expired at now: logins begun and never
// finished would otherwise stay until their nonce is read again.
func (m *MemoryStore) Sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for nonce, st := range m.states {
		if !now.Before(st.Expires) {
			delete(m.states, nonce)
		}
	}
}
