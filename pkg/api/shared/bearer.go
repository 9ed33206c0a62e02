package shared

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/musterd/musterd/pkg/identity"
)

// Bearer checks the "Authorization: Bearer <token>" of requests against a
// configured token: the one check the API and the MCP endpoint (package
// mcpserve) share, so that the two cannot disagree about who is let in.
// The zero value, like NewBearer(""), requires nothing.
type Bearer struct {
	required bool
	hash     [sha256.Size]byte
}

// NewBearer returns the check of token; an empty token requires nothing.
func NewBearer(token string) Bearer {
	return Bearer{required: token != "", hash: sha256.Sum256([]byte(token))}
}

// Required reports whether a token is configured.
func (b Bearer) Required() bool { return b.required }

// Authorized reports whether r carries the token, when one is required.
// Comparing digests keeps the time independent of the token's length as
// well as its content.
func (b Bearer) Authorized(r *http.Request) bool {
	if !b.required {
		return true
	}
	scheme, credentials, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(credentials)))
	return subtle.ConstantTimeCompare(got[:], b.hash[:]) == 1 && strings.EqualFold(scheme, "Bearer")
}

// Authenticate is Authorized as an identity.Authenticator: the caller of
// the token is nobody in particular.
func (b Bearer) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	if b.Authorized(r) {
		return identity.Identity{}, nil
	}
	return identity.Identity{}, &identity.Challenge{Status: http.StatusUnauthorized, WWWAuthenticate: `Bearer realm="musterd"`,
		Reason: "a valid bearer token is required: send Authorization: Bearer <token>"}
}
