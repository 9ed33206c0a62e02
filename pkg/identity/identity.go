package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Identity is who a request comes from.
type Identity struct {
	// Subject is the authenticated user (a token's subject claim); ""
	// when musterd authenticates no one.
	Subject string
	// Issuer is who vouched for Subject (the token's iss): the same
	// subject from two issuers is two users.
	Issuer string
	// Session is the session the request belongs to: a login, or without
	// one the client's MCP session.
	Session string
}

// Owner is what per-user state is keyed by: the user, or without one the
// session; "" for the zero Identity.
func (id Identity) Owner() string {
	switch {
	case id.Subject != "":
		return "user:" + id.Issuer + "|" + id.Subject
	case id.Session != "":
		return "session:" + id.Session
	}
	return ""
}

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the Identity ctx carries, if any.
func From(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(key{}).(Identity)
	return id, ok && id.Owner() != ""
}

// LogTag names owner in a log line without what makes it a credential: a
// session ID (which lets one post into the session) or a user's subject
// and issuer. It is the owner's kind and a short digest, the same for one
// owner in every line, so that lines can be matched up.
func LogTag(owner string) string {
	if owner == "" {
		return ""
	}
	kind, _, _ := strings.Cut(owner, ":")
	sum := sha256.Sum256([]byte(owner))
	return kind + "#" + hex.EncodeToString(sum[:6])
}
