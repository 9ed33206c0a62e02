package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/identity"
)

// letIn lets everyone in as who.
type letIn struct{ who identity.Identity }

func (l letIn) Authenticate(*http.Request) (identity.Identity, *identity.Challenge) {
	return l.who, nil
}

// A user is seen with the JWT they came with, which forwarding servers
// may verify; a user who came with a token that is no JWT (an opaque
// access token, which only its provider can judge) is not, and so no
// server is ever given it, as muster never forwards one.
func TestOnlyAJWTIsKeptForForwarding(t *testing.T) {
	alice := identity.Identity{Subject: "alice", Issuer: "https://idp.test"}
	var seen []string
	a := ssoAuthenticator{inner: letIn{alice}, seen: func(who identity.Identity, token string) {
		assert.Equal(t, alice, who)
		seen = append(seen, token)
	}}
	const jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	for _, token := range []string{jwt, "opaque-access-token"} {
		r, _ := http.NewRequest(http.MethodPost, "http://musterd.test/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		who, challenge := a.Authenticate(r)
		assert.Nil(t, challenge)
		assert.Equal(t, alice, who, "let in either way")
	}
	assert.Equal(t, []string{jwt}, seen)
}
