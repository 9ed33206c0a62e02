package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
)

// cimdHost serves client metadata documents over TLS; doc is the document
// served at path.
func cimdHost(t *testing.T, docs map[string]func(id string) map[string]any) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc(srv.URL + r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// trustBoth makes the server's client trust Dex's CA and host's
// certificate.
func trustBoth(host *httptest.Server) func(*Options) {
	return func(o *Options) {
		t := o.HTTPClient.Transport.(*http.Transport).Clone()
		pool := t.TLSClientConfig.RootCAs.Clone()
		pool.AddCert(host.Certificate())
		t.TLSClientConfig.RootCAs = pool
		o.HTTPClient = &http.Client{Transport: t, Timeout: o.HTTPClient.Timeout}
	}
}

// A client ID that is the URL of a Client ID Metadata Document (as
// muster's CLI uses) needs no registration: musterd fetches the document,
// and the client logs its user in with the redirect URIs it names, a
// loopback one on any port. A document naming another client_id, or a
// confidential client, is refused; and a document on a private address is
// not fetched unless allowed.
func TestAClientOfAMetadataDocumentLogsInWithoutRegistering(t *testing.T) {
	good := func(id string) map[string]any {
		return map[string]any{"client_id": id, "client_name": "agent", "redirect_uris": []string{"http://localhost:3000/callback"},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}}
	}
	host := cimdHost(t, map[string]func(string) map[string]any{
		"/agent.json":    good,
		"/other-id.json": func(string) map[string]any { return good("https://elsewhere.example/agent.json") },
		"/confidential.json": func(id string) map[string]any {
			d := good(id)
			d["token_endpoint_auth_method"] = "client_secret_basic"
			return d
		},
	})
	tune := trustBoth(host)
	r := startRig(t, dextest.Options{TLS: true}, func(o *Options) {
		tune(o)
		o.EnableCIMD, o.CIMDAllowPrivateAddresses = true, true
	})
	client := host.URL + "/agent.json"
	verifier := oauth2.GenerateVerifier()
	redirect := "http://localhost:41234/callback" // another port than the document's
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "scope": {"openid"},
		"state": {"st"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	back := r.follow(t, r.dex.BrowserRedirect(t, r.base+PathAuthorize+"?"+q.Encode(), "alice").String())
	require.Equal(t, "localhost:41234", back.Host, back.String())
	status, out := r.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
		"client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	require.Equal(t, http.StatusOK, status, out)
	sess, err := r.as.Lookup(context.Background(), str(out, "access_token"))
	require.NoError(t, err)
	assert.Equal(t, client, sess.Client)

	for _, path := range []string{"/other-id.json", "/confidential.json", "/missing.json"} {
		q.Set("client_id", host.URL+path)
		resp, err := noRedirects.Get(r.base + PathAuthorize + "?" + q.Encode())
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, path)
	}

	strict := startRig(t, dextest.Options{TLS: true}, func(o *Options) { tune(o); o.EnableCIMD = true })
	q.Set("client_id", client)
	resp, err := noRedirects.Get(strict.base + PathAuthorize + "?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a document on a loopback address is not fetched")
	off := startRig(t, dextest.Options{TLS: true}, func(o *Options) { tune(o); o.CIMDAllowPrivateAddresses = true })
	resp, err = noRedirects.Get(off.base + PathAuthorize + "?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "without enableCIMD, a URL is an unknown client")
}
