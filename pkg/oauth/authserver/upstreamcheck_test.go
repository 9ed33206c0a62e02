package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/identity"
)

type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("the provider is unreachable")
}

// A login stands while its provider takes its upstream token: a provider
// that cannot be reached ends nothing; one that refuses the token (here,
// Dex, given a token it never issued, as it answers a revoked one) ends
// the login, every token of it, at once.
func TestALoginTheProviderEndedIsOverAtTheNextRequest(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	out := r.tokens(t, client, "alice")
	a := r.as.Authenticator(AuthenticatorOptions{Others: fixedAuthenticator{who: identity.Identity{Subject: "other"}}, ResourceMetadataURL: r.base + "/prm"})
	request := func() *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+str(out, "access_token"))
		return req
	}
	who, challenge := a.Authenticate(request())
	require.Nil(t, challenge)
	require.NotEmpty(t, who.Subject)

	// The provider unreachable: no revocation, the login stands.
	httpClient := r.as.upstream.client
	r.as.upstream.client = &http.Client{Transport: failingTransport{}}
	_, challenge = a.Authenticate(request())
	assert.Nil(t, challenge, "a provider down ends no login")
	r.as.upstream.client = httpClient

	// The provider refuses the login's token.
	ctx := context.Background()
	var fam familyRecord
	require.NoError(t, getJSON(ctx, r.as.opts.Store, kindFamily+who.Session, &fam))
	fam.Upstream.AccessToken = "a-token-dex-never-issued"
	require.NoError(t, putJSON(ctx, r.as.opts.Store, kindFamily+who.Session, fam, 0))
	_, challenge = a.Authenticate(request())
	require.NotNil(t, challenge, "the provider's no ends the login")
	assert.Equal(t, http.StatusUnauthorized, challenge.Status)
	assert.Contains(t, challenge.Reason, "ended at the identity provider")
	_, found, err := r.as.opts.Store.Get(ctx, kindFamily+who.Session)
	require.NoError(t, err)
	assert.False(t, found, "the login is revoked at musterd too")
	status, body := r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(out, "refresh_token")}})
	assert.NotEqual(t, http.StatusOK, status, "its refresh token with it: %v", body)
}
