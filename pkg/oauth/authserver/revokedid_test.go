package authserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/identity"
)

// The provider's ID token a login handed the client is a token musterd
// would take as it is (the check it wraps, here one that takes anything);
// once the login is revoked it is refused, before that check, with the
// challenge.
func TestAnEndedLoginsIDTokenIsRefused(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	out := r.tokens(t, client, "alice")
	idToken := str(out, "id_token")
	require.NotEmpty(t, idToken)
	a := r.as.Authenticator(AuthenticatorOptions{Others: fixedAuthenticator{who: identity.Identity{Subject: "taken-as-it-is"}}, ResourceMetadataURL: r.base + "/prm"})
	request := func(token string) *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return req
	}
	who, challenge := a.Authenticate(request(idToken))
	require.Nil(t, challenge)
	assert.Equal(t, "taken-as-it-is", who.Subject, "while the login stands, the wrapped check judges it")

	status, _, _ := r.call(t, http.MethodPost, PathRevoke, strings.NewReader(url.Values{"token": {str(out, "refresh_token")}, "client_id": {client}}.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	require.Equal(t, http.StatusOK, status)
	_, challenge = a.Authenticate(request(idToken))
	require.NotNil(t, challenge, "the ended login's ID token")
	assert.Equal(t, http.StatusUnauthorized, challenge.Status)
	assert.Contains(t, challenge.Reason, "has ended")
	assert.NotContains(t, challenge.WWWAuthenticate+challenge.Reason, idToken)

	other := r.tokens(t, client, "bob")
	who, challenge = a.Authenticate(request(str(other, "id_token")))
	assert.Nil(t, challenge, "another login's ID token is not refused")
	assert.Equal(t, "taken-as-it-is", who.Subject)
}
