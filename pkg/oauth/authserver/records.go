package authserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/musterd/musterd/pkg/oauth/store"
)

// What the authorization server keeps, each record JSON under a key whose
// first segment names its kind (the only part of a key the store's errors
// show). Credentials are never part of a key: a token, code or state is
// found by its SHA-256, and only a registered client's ID and a family's
// random ID appear as they are.
const (
	kindClient    = "asclient:"    // a registered client, by client_id
	kindRequest   = "asrequest:"   // an authorization request, by its ID
	kindCode      = "ascode:"      // an issued code → its request, by the code's hash
	kindState     = "asstate:"     // an upstream login under way, by the state's hash
	kindAccess    = "asaccess:"    // an access token, by its hash
	kindRefresh   = "asrefresh:"   // a refresh token, by its hash
	kindFamily    = "asfamily:"    // a token family (one login), by its ID
	kindConsent   = "asconsent:"   // a consent page's CSRF token hash, by its request's ID
	kindRevokedID = "asrevokedid:" // an ended login's provider ID token, by its hash (revokedid.go)
)

// Token prefixes: musterd's own tokens are told from other issuers' at a
// glance, so that a caller's JWT or provider token is never looked up
// here, and one of musterd's is never passed on to another check.
const (
	accessPrefix  = "mdat_"
	refreshPrefix = "mdrt_"
)

// hashed is the key part under which a credential is found.
func hashed(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// random returns n random bytes, base64url without padding.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// clientRecord is a client registered at /oauth/register.
type clientRecord struct {
	ID string `json:"id"`
	// SecretHash is the SHA-256 of its secret; empty for a public client.
	SecretHash    string    `json:"secret_hash,omitempty"`
	Name          string    `json:"name,omitempty"`
	RedirectURIs  []string  `json:"redirect_uris"`
	GrantTypes    []string  `json:"grant_types"`
	ResponseTypes []string  `json:"response_types"`
	AuthMethod    string    `json:"auth_method"`
	Native        bool      `json:"native,omitempty"`
	Loopback      bool      `json:"loopback,omitempty"` // registered http loopback redirect URIs, allowed then
	IssuedAt      time.Time `json:"issued_at"`
	// Operator is a client registered with the registration token: the
	// operator's own, whose users are not asked to consent.
	Operator bool `json:"operator,omitempty"`
}

// requestRecord is an authorization request waiting for the user's login
// upstream, then for its code to be exchanged.
type requestRecord struct {
	ID                  string    `json:"id"`
	ClientID            string    `json:"client_id"`
	RedirectURI         string    `json:"redirect_uri"`
	State               string    `json:"state,omitempty"`
	Nonce               string    `json:"nonce,omitempty"`
	Scopes              []string  `json:"scopes,omitempty"`
	ResponseType        string    `json:"response_type"`
	ResponseMode        string    `json:"response_mode,omitempty"`
	CodeChallenge       string    `json:"code_challenge"`
	CodeChallengeMethod string    `json:"code_challenge_method"`
	Created             time.Time `json:"created"`
	// Set by the upstream callback: who logged in, and the provider's
	// tokens, which the code's exchange makes a family's.
	Subject  string         `json:"subject,omitempty"`
	Upstream upstreamTokens `json:"upstream,omitzero"`
	AuthTime time.Time      `json:"auth_time,omitzero"`
}

// stateRecord is an upstream login under way: what the callback needs to
// finish it.
type stateRecord struct {
	Request  string `json:"request"`
	Verifier string `json:"verifier"`
	Nonce    string `json:"nonce"`
}

// upstreamTokens are the provider's tokens of one login.
type upstreamTokens struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	IDToken      string    `json:"id_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// IDExpiry is the ID token's own expiry.
	IDExpiry time.Time `json:"id_expiry,omitzero"`
}

// familyRecord is one login: the tokens musterd issued for it share it,
// and so end with it.
type familyRecord struct {
	ID       string         `json:"id"`
	ClientID string         `json:"client_id"`
	Subject  string         `json:"subject"`
	Scopes   []string       `json:"scopes,omitempty"`
	Upstream upstreamTokens `json:"upstream"`
	// Refresh is the hash of the family's one live refresh token.
	Refresh string    `json:"refresh"`
	Created time.Time `json:"created"`
}

// accessRecord is an access token issued by musterd.
type accessRecord struct {
	Family  string    `json:"family"`
	Expiry  time.Time `json:"expiry"`
	Scopes  []string  `json:"scopes,omitempty"`
	Client  string    `json:"client"`
	Subject string    `json:"subject"`
}

// refreshRecord is a refresh token issued by musterd. A rotated one is
// kept, marked Used, so that a second use is seen for what it is.
type refreshRecord struct {
	Family string `json:"family"`
	Client string `json:"client"`
	Used   bool   `json:"used,omitempty"`
}

// errNotFound is a record that is not there (or has expired).
var errNotFound = errors.New("not found")

func getJSON(ctx context.Context, s store.Store, key string, v any) error {
	data, found, err := s.Get(ctx, key)
	return decodeRecord(data, found, err, v)
}

// takeJSON is getJSON of a record that is good once: it is gone after.
func takeJSON(ctx context.Context, s store.Store, key string, v any) error {
	data, found, err := s.Take(ctx, key)
	return decodeRecord(data, found, err, v)
}

func decodeRecord(data []byte, found bool, err error, v any) error {
	if err != nil {
		return err
	}
	if !found {
		return errNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("authserver: a stored %T does not decode: %w", v, err)
	}
	return nil
}

func putJSON(ctx context.Context, s store.Store, key string, v any, ttl time.Duration) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.Put(ctx, key, data, ttl)
}
