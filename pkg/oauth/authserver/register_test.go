package authserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/internal/dextest"
)

// Dynamic client registration follows muster's rules.
func TestRegistrationRules(t *testing.T) {
	const token = "reg-t0ken"
	locked := startRig(t, dextest.Options{TLS: true}, func(o *Options) {
		o.AllowPublicClientRegistration = false
		o.AllowLocalhostRedirectURIs = false
		o.RegistrationToken = token
		o.TrustedPublicRegistrationSchemes = []string{"cursor"}
	})
	open := startRig(t, dextest.Options{TLS: true}, nil)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	const (
		confidential = `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`
		public       = `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`
		loopback     = `{"redirect_uris":["http://localhost:8765/cb"],"token_endpoint_auth_method":"none"}`
	)
	for _, c := range []struct {
		name   string
		r      *rig
		body   string
		header http.Header
		status int
		err    string
	}{
		{"no token", locked, confidential, nil, http.StatusUnauthorized, "invalid_token"},
		{"a wrong token", locked, confidential, bearer("wrong"), http.StatusUnauthorized, "invalid_token"},
		{"the token, confidential", locked, confidential, bearer(token), http.StatusCreated, ""},
		{"the token, public", locked, public, bearer(token), http.StatusBadRequest, "invalid_request"},
		{"a trusted scheme, public", locked, `{"redirect_uris":["cursor://anysphere.cursor-retrieval/oauth/callback"],"token_endpoint_auth_method":"none","application_type":"native"}`, nil, http.StatusCreated, ""},
		{"loopback, not allowed", locked, `{"redirect_uris":["http://localhost:8765/cb"]}`, bearer(token), http.StatusBadRequest, "invalid_redirect_uri"},
		{"public registration, public", open, public, nil, http.StatusCreated, ""},
		{"loopback, allowed", open, loopback, nil, http.StatusCreated, ""},
		{"http, not loopback", open, `{"redirect_uris":["http://app.example/cb"],"token_endpoint_auth_method":"none"}`, nil, http.StatusBadRequest, "invalid_redirect_uri"},
		{"a fragment", open, `{"redirect_uris":["https://app.example/cb#x"],"token_endpoint_auth_method":"none"}`, nil, http.StatusBadRequest, "invalid_redirect_uri"},
		{"javascript", open, `{"redirect_uris":["javascript:alert(1)"],"token_endpoint_auth_method":"none"}`, nil, http.StatusBadRequest, "invalid_redirect_uri"},
		{"no redirect", open, `{"token_endpoint_auth_method":"none"}`, nil, http.StatusBadRequest, "invalid_redirect_uri"},
		{"another application_type", open, `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none","application_type":"tv"}`, nil, http.StatusBadRequest, "invalid_client_metadata"},
		{"another auth method", open, `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, nil, http.StatusBadRequest, "invalid_client_metadata"},
		{"bad JSON", open, `{`, nil, http.StatusBadRequest, "invalid_request"},
	} {
		status, out := c.r.register(t, c.body, c.header)
		assert.Equal(t, c.status, status, "%s: %v", c.name, out)
		if c.err != "" {
			assert.Equal(t, c.err, str(out, "error"), c.name)
			continue
		}
		assert.NotEmpty(t, str(out, "client_id"), c.name)
	}

	status, out := locked.register(t, confidential, bearer(token))
	assert.Equal(t, http.StatusCreated, status)
	assert.NotEmpty(t, str(out, "client_secret"), "a confidential client gets its secret")
	assert.Equal(t, "web", str(out, "application_type"))
	status, out = open.register(t, `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none","application_type":"native"}`, nil)
	assert.Equal(t, http.StatusCreated, status)
	assert.Empty(t, str(out, "client_secret"), "a public client has none")
	assert.Equal(t, "native", str(out, "application_type"))
}
