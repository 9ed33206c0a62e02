package authserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
)

// cursorRedirect is Cursor's redirect URI, of a private-use scheme.
const cursorRedirect = "cursor://anysphere.cursor-retrieval/oauth/callback"

// authorizeTo sends an authorization request of client with redirect and
// returns musterd's answer: its status and Location.
func (r *rig) authorizeTo(t *testing.T, client, redirect string) (int, string) {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "scope": {"openid"},
		"state": {"st"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
	resp, err := noRedirects.Get(r.base + PathAuthorize + "?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// A client that registers a private-use scheme's redirect URI without
// naming its application_type is a native app, as is a metadata
// document's: its user is sent on to the provider, where zitadel would
// refuse a custom scheme to a web client.
func TestACustomSchemeClientIsNativeWithoutSayingSo(t *testing.T) {
	host := cimdHost(t, map[string]func(string) map[string]any{
		"/cursor.json": func(id string) map[string]any {
			return map[string]any{"client_id": id, "client_name": "cursor", "redirect_uris": []string{cursorRedirect},
				"token_endpoint_auth_method": "none"}
		},
	})
	tune := trustBoth(host)
	r := startRig(t, dextest.Options{TLS: true}, func(o *Options) {
		tune(o)
		o.AllowPublicClientRegistration = false
		o.TrustedPublicRegistrationSchemes = []string{"cursor"}
		o.EnableCIMD, o.CIMDAllowPrivateAddresses = true, true
	})
	status, out := r.register(t, `{"client_name":"Cursor","redirect_uris":["`+cursorRedirect+`"],"token_endpoint_auth_method":"none"}`, nil)
	require.Equal(t, http.StatusCreated, status, out)
	assert.Equal(t, "native", str(out, "application_type"))

	dexAuth := r.dex.Endpoint().AuthURL
	for name, client := range map[string]string{"registered": str(out, "client_id"), "metadata document": host.URL + "/cursor.json"} {
		status, to := r.authorizeTo(t, client, cursorRedirect)
		require.Equal(t, http.StatusFound, status, name)
		assert.True(t, strings.HasPrefix(to, dexAuth+"?"), "%s: the user goes to the provider, not %s", name, to)
	}

	status, out = r.register(t, `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`, http.Header{})
	require.Equal(t, http.StatusUnauthorized, status, out)
	open := startRig(t, dextest.Options{TLS: true}, nil)
	status, out = open.register(t, `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`, nil)
	require.Equal(t, http.StatusCreated, status, out)
	assert.Equal(t, "web", str(out, "application_type"), "https alone is a web client's")
}
