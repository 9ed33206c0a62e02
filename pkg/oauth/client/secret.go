package client

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/identity"
	"golang.org/x/oauth2"
)

// A token a user holds for a protected server is theirs alone: it must
// reach the server it is for and the store that keeps it, and nothing
// else. Every type here that holds one prints, logs and formats as
// "<redacted>", whatever verb or handler is used, so a careless log line
// or error wrap cannot carry it out.

const redacted = "<redacted>"

// Secret is a string that never prints. Reveal returns the value, for the
// one place that must send it.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string                { return redactedUnlessEmpty(string(s)) }
func (s Secret) GoString() string              { return s.String() }
func (s Secret) LogValue() slog.Value          { return slog.StringValue(s.String()) }
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalText keeps a secret out of JSON, YAML and every other text
// encoding; the stores keep the value itself (Reveal) on purpose.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func redactedUnlessEmpty(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// Token is what is stored for a user and an issuer: the provider's
// answer to a code exchange or a refresh.
type Token struct {
	AccessToken  Secret
	RefreshToken Secret
	// TokenType is the type the provider named, usually "Bearer".
	TokenType string
	// Expiry is when the access token expires; zero when the provider
	// named no lifetime.
	Expiry time.Time
	// Scopes are the scopes granted: the provider's scope answer, or
	// when it gave none the scopes asked for (RFC 6749 §5.1).
	Scopes []string
	// ClientID is the client the token was issued to, which any refresh
	// must present again.
	ClientID string
}

func (t Token) String() string {
	return fmt.Sprintf("Token{access %s, refresh %s, type %q, expiry %s, scopes %q, client %q}",
		redactedUnlessEmpty(t.AccessToken.Reveal()), redactedUnlessEmpty(t.RefreshToken.Reveal()),
		t.TokenType, t.Expiry.Format(time.RFC3339), t.Scopes, t.ClientID)
}
func (t Token) GoString() string              { return t.String() }
func (t Token) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(t.String())) }
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("access_token", redactedUnlessEmpty(t.AccessToken.Reveal())),
		slog.String("refresh_token", redactedUnlessEmpty(t.RefreshToken.Reveal())),
		slog.Time("expiry", t.Expiry),
		slog.String("scope", strings.Join(t.Scopes, " ")),
	)
}

// oauth2 returns the token as x/oauth2 takes it.
func (t Token) oauth2() *oauth2.Token {
	return &oauth2.Token{
		AccessToken:  t.AccessToken.Reveal(),
		RefreshToken: t.RefreshToken.Reveal(),
		TokenType:    t.TokenType,
		Expiry:       t.Expiry,
	}
}

// tokenFrom is the Token of an x/oauth2 answer: the scopes granted are
// those it names, else those asked for; a refresh that returns no new
// refresh token keeps the old one (x/oauth2's refresher already does).
func tokenFrom(tok *oauth2.Token, asked []string, clientID string) Token {
	scopes := asked
	if s, ok := tok.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		scopes = strings.Fields(s)
	}
	return Token{
		AccessToken:  Secret(tok.AccessToken),
		RefreshToken: Secret(tok.RefreshToken),
		TokenType:    tok.TokenType,
		Expiry:       tok.Expiry,
		Scopes:       scopes,
		ClientID:     clientID,
	}
}

// ownerLog names an owner in the log: identity.LogTag.
func ownerLog(owner string) string { return identity.LogTag(owner) }
