package authserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/identity"
)

// claims reads a JWT's payload, unverified, for assertions.
func claims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	require.Len(t, parts, 3, "a JWT")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(payload, &out))
	return out
}

// A user logs in through musterd: /oauth/authorize sends them to Dex,
// Dex's form sends them back to /oauth/callback, which sends them to the
// client with musterd's code, the client's state and musterd's iss; the
// code, redeemed with the PKCE verifier, gives musterd's opaque tokens
// and Dex's own ID token of that login, and the access token is the
// user's. A code is redeemed once.
func TestALoginThroughTheProviderGivesMusterdsTokens(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	verifier := oauth2.GenerateVerifier()
	back := r.login(t, client, "alice", verifier)
	assert.Equal(t, clientRedirect, back.Scheme+"://"+back.Host+back.Path)
	q := back.Query()
	assert.Equal(t, "client-state", q.Get("state"))
	assert.Equal(t, r.base, q.Get("iss"), "RFC 9207: the response names its issuer")
	code := q.Get("code")
	require.NotEmpty(t, code)

	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client},
		"redirect_uri": {clientRedirect}, "code_verifier": {"not-the-verifier-" + verifier}}
	status, out := r.token(t, form)
	assert.Equal(t, http.StatusBadRequest, status, "a wrong verifier")
	assert.Equal(t, "invalid_grant", str(out, "error"))

	r2 := r.login(t, client, "alice", verifier)
	form.Set("code", r2.Query().Get("code"))
	form.Set("code_verifier", verifier)
	status, out = r.token(t, form)
	require.Equal(t, http.StatusOK, status, out)
	access, refresh, id := str(out, "access_token"), str(out, "refresh_token"), str(out, "id_token")
	assert.True(t, strings.HasPrefix(access, "mdat_"), access)
	assert.True(t, strings.HasPrefix(refresh, "mdrt_"), refresh)
	assert.Equal(t, "Bearer", str(out, "token_type"))
	alice := r.dex.User(t, "alice")
	idClaims := claims(t, id)
	assert.Equal(t, r.dex.Issuer, idClaims["iss"], "the provider's own ID token: musterd signs nothing")
	assert.Equal(t, dextest.ClientMusterd, idClaims["aud"])
	ttl, _ := out["expires_in"].(float64)
	assert.InDelta(t, DefaultAccessTokenTTL.Seconds(), ttl, 1, "30 minutes: Dex's own tokens last longer")

	sess, err := r.as.Lookup(context.Background(), access)
	require.NoError(t, err)
	assert.Equal(t, r.dex.Issuer, sess.Issuer)
	assert.Equal(t, idClaims["sub"], sess.Subject, "the user is the provider's sub")
	assert.NotEmpty(t, sess.Family)
	assert.Equal(t, client, sess.Client)
	assert.NotEmpty(t, alice.UserID)

	status, out = r.token(t, form)
	assert.Equal(t, http.StatusBadRequest, status, "a code is redeemed once")
	assert.Equal(t, "invalid_grant", str(out, "error"))
}

// The metadata describes the server: musterd's endpoints, S256 alone,
// the iss parameter, no keys (musterd signs nothing), and it is served
// under both well-known names.
func TestTheMetadataDescribesMusterd(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	for _, path := range []string{PathMetadata, PathOIDC} {
		status, _, doc := r.call(t, http.MethodGet, path, nil, nil)
		require.Equal(t, http.StatusOK, status, path)
		assert.Equal(t, r.base, doc["issuer"], path)
		assert.Equal(t, r.base+PathAuthorize, doc["authorization_endpoint"], path)
		assert.Equal(t, r.base+PathToken, doc["token_endpoint"], path)
		assert.Equal(t, r.base+PathRevoke, doc["revocation_endpoint"], path)
		assert.Equal(t, r.base+PathRegister, doc["registration_endpoint"], path)
		assert.Equal(t, true, doc["authorization_response_iss_parameter_supported"], path)
		assert.Equal(t, []any{"S256"}, doc["code_challenge_methods_supported"], path)
		assert.Equal(t, []any{"authorization_code", "refresh_token"}, doc["grant_types_supported"], path)
		assert.NotContains(t, doc, "jwks_uri", path)
	}
}

// PKCE is required, and S256 only: plain and no challenge are refused
// back to the client, with iss; nothing reaches the provider.
func TestPlainPKCEIsRefused(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	for name, params := range map[string]url.Values{
		"plain":        {"code_challenge": {"a-plain-challenge-that-is-long-enough-0123456789"}, "code_challenge_method": {"plain"}},
		"no challenge": {},
	} {
		q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {clientRedirect},
			"scope": {"openid"}, "state": {"s1"}}
		for k, v := range params {
			q[k] = v
		}
		back := r.follow(t, r.base+PathAuthorize+"?"+q.Encode())
		assert.Equal(t, clientRedirect, back.Scheme+"://"+back.Host+back.Path, name)
		assert.Equal(t, "invalid_request", back.Query().Get("error"), name)
		assert.Equal(t, r.base, back.Query().Get("iss"), name)
		assert.Equal(t, "s1", back.Query().Get("state"), name)
	}
}

// A refresh rotates the refresh token; presenting the spent one again
// revokes the whole login: its new refresh token and its access tokens
// stop working.
func TestARefreshRotatesAndReuseRevokesTheLogin(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	first := r.tokens(t, client, "bob")
	refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(first, "refresh_token")}}
	status, second := r.token(t, refresh)
	require.Equal(t, http.StatusOK, status, second)
	assert.NotEqual(t, str(first, "refresh_token"), str(second, "refresh_token"), "rotated")
	assert.NotEqual(t, str(first, "access_token"), str(second, "access_token"))
	assert.NotEmpty(t, str(second, "id_token"))
	ctx := context.Background()
	s1, err := r.as.Lookup(ctx, str(first, "access_token"))
	require.NoError(t, err)
	s2, err := r.as.Lookup(ctx, str(second, "access_token"))
	require.NoError(t, err)
	assert.Equal(t, s1.Family, s2.Family, "one login")

	status, out := r.token(t, refresh)
	assert.Equal(t, http.StatusBadRequest, status, "the spent refresh token again")
	assert.Equal(t, "invalid_grant", str(out, "error"))
	_, err = r.as.Lookup(ctx, str(second, "access_token"))
	assert.ErrorIs(t, err, ErrInvalidToken, "the login is revoked")
	status, out = r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(second, "refresh_token")}})
	assert.Equal(t, http.StatusBadRequest, status, "its new refresh token too")
	assert.Equal(t, "invalid_grant", str(out, "error"))

	other := r.publicClient(t)
	third := r.tokens(t, client, "bob")
	status, out = r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {other}, "refresh_token": {str(third, "refresh_token")}})
	assert.Equal(t, http.StatusBadRequest, status, "another client's refresh token")
	assert.Equal(t, "invalid_grant", str(out, "error"))
}

// Revoking an access token ends it; revoking a refresh token ends the
// login with all its tokens.
func TestRevocation(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	ctx := context.Background()
	revoke := func(token string) {
		status, _, out := r.call(t, http.MethodPost, PathRevoke, strings.NewReader(url.Values{"token": {token}, "client_id": {client}}.Encode()),
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
		require.Equal(t, http.StatusOK, status, out)
	}
	a := r.tokens(t, client, "alice")
	revoke(str(a, "access_token"))
	_, err := r.as.Lookup(ctx, str(a, "access_token"))
	assert.ErrorIs(t, err, ErrInvalidToken)
	status, out := r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(a, "refresh_token")}})
	assert.Equal(t, http.StatusOK, status, "the login lives on: only that access token was revoked; %v", out)

	b := r.tokens(t, client, "alice")
	revoke(str(b, "refresh_token"))
	_, err = r.as.Lookup(ctx, str(b, "access_token"))
	assert.ErrorIs(t, err, ErrInvalidToken, "the refresh token's login is revoked")
	status, _ = r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(b, "refresh_token")}})
	assert.Equal(t, http.StatusBadRequest, status)

	revoke("mdat_no-such-token") // RFC 7009: no error for an unknown token
}

// A token exchange is refused with invalid_grant, with or without a
// client: musterd mints no tokens for other audiences.
func TestATokenExchangeIsRefused(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	subject, _, _ := r.dex.PasswordLogin(t, "alice")
	for _, form := range []url.Values{
		{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {subject},
			"subject_token_type": {"urn:ietf:params:oauth:token-type:jwt"}},
		{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {subject},
			"subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"}, "client_id": {client}},
	} {
		status, out := r.token(t, form)
		assert.Equal(t, http.StatusBadRequest, status, out)
		assert.Equal(t, "invalid_grant", str(out, "error"))
	}
}

// The callback acts only on a login musterd started: another state gets
// an error page and no redirect; an answer naming another issuer (RFC
// 9207's mix-up) goes back to the client as access_denied, with no code,
// as does the provider's refusal.
func TestTheCallbackActsOnlyOnMusterdsLogins(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	for _, q := range []string{"", "?code=x", "?code=x&state=not-musterds"} {
		resp, err := noRedirects.Get(r.base + PathCallback + q)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
		assert.Empty(t, resp.Header.Get("Location"), q)
	}

	client := r.publicClient(t)
	upstream := r.dex.BrowserRedirect(t, r.authorizeURL(client, "st", oauth2.GenerateVerifier()), "alice")
	tampered := *upstream
	q := tampered.Query()
	q.Set("iss", "https://evil.example")
	tampered.RawQuery = q.Encode()
	back := r.follow(t, tampered.String())
	assert.Equal(t, "access_denied", back.Query().Get("error"))
	assert.Empty(t, back.Query().Get("code"))
	assert.Equal(t, r.base, back.Query().Get("iss"))

	resp, err := noRedirects.Get(upstream.String())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "the state was spent by the refused answer")

	// The provider's refusal goes back to the client as access_denied.
	toDex := r.follow(t, r.authorizeURL(client, "st2", oauth2.GenerateVerifier()))
	require.True(t, strings.HasPrefix(toDex.String(), r.dex.Issuer+"/"), toDex.String())
	refusal := url.Values{"error": {"access_denied"}, "state": {toDex.Query().Get("state")}}
	back = r.follow(t, r.base+PathCallback+"?"+refusal.Encode())
	assert.Equal(t, clientRedirect, back.Scheme+"://"+back.Host+back.Path)
	assert.Equal(t, "access_denied", back.Query().Get("error"))
	assert.Equal(t, "st2", back.Query().Get("state"))
	assert.Equal(t, r.base, back.Query().Get("iss"))
}

// The provider's tokens are renewed at the provider when about to expire,
// and musterd's access tokens last no longer than the provider's.
func TestTheProvidersTokensAreRenewedAndCapTheAccessTokens(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true, IDTokenExpiry: 20 * time.Second}, nil)
	client := r.publicClient(t)
	out := r.tokens(t, client, "alice")
	ttl, _ := out["expires_in"].(float64)
	assert.LessOrEqual(t, ttl, 20.0, "capped to the provider's 20 s")
	assert.Greater(t, ttl, 0.0)
	sess, err := r.as.Lookup(context.Background(), str(out, "access_token"))
	require.NoError(t, err)
	id, err := r.as.UpstreamIDToken(context.Background(), sess.Family)
	require.NoError(t, err)
	assert.NotEqual(t, str(out, "id_token"), id, "within 30 s of its expiry: renewed at Dex")
	assert.Equal(t, claims(t, str(out, "id_token"))["sub"], claims(t, id)["sub"])
}

// The authenticator lets in musterd's own tokens as their user, refuses
// a revoked one with the challenge, and leaves any other token to the
// check it wraps.
func TestTheAuthenticatorTakesMusterdsTokensAndPassesOthersOn(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	client := r.publicClient(t)
	out := r.tokens(t, client, "alice")
	others := fixedAuthenticator{who: identity.Identity{Subject: "someone-else"}}
	a := r.as.Authenticator(AuthenticatorOptions{Others: others, ResourceMetadataURL: r.base + "/.well-known/oauth-protected-resource"})
	request := func(token string) *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return req
	}
	who, forward, challenge := a.AuthenticateForwarding(request(str(out, "access_token")))
	require.Nil(t, challenge)
	assert.Equal(t, r.dex.Issuer, who.Issuer)
	assert.Equal(t, claims(t, str(out, "id_token"))["sub"], who.Subject)
	assert.NotEmpty(t, who.Session)
	assert.Equal(t, str(out, "id_token"), forward, "a forwarding server gets the provider's ID token, not musterd's")

	who, _ = a.Authenticate(request("a-jwt.of.someone"))
	assert.Equal(t, "someone-else", who.Subject, "another token is the other check's")

	status, _, _ := r.call(t, http.MethodPost, PathRevoke, strings.NewReader(url.Values{"token": {str(out, "refresh_token")}, "client_id": {client}}.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	require.Equal(t, http.StatusOK, status)
	_, challenge = a.Authenticate(request(str(out, "access_token")))
	require.NotNil(t, challenge, "revoked")
	assert.Equal(t, http.StatusUnauthorized, challenge.Status)
	assert.True(t, strings.HasPrefix(challenge.WWWAuthenticate, `Bearer resource_metadata="`+r.base+`/.well-known/oauth-protected-resource", error="invalid_token"`), challenge.WWWAuthenticate)
	assert.NotContains(t, challenge.WWWAuthenticate+challenge.Reason, str(out, "access_token"))
}

type fixedAuthenticator struct{ who identity.Identity }

func (f fixedAuthenticator) Authenticate(*http.Request) (identity.Identity, *identity.Challenge) {
	return f.who, nil
}

// Browser clients of AllowedOrigins alone get CORS answers; without any,
// no origin does.
func TestCORSIsForTheAllowedOriginsAlone(t *testing.T) {
	allowed := startRig(t, dextest.Options{TLS: true}, func(o *Options) { o.AllowedOrigins = []string{"https://app.example"} })
	none := startRig(t, dextest.Options{TLS: true}, nil)
	for _, c := range []struct {
		r      *rig
		origin string
		want   string
	}{
		{allowed, "https://app.example", "https://app.example"},
		{allowed, "https://evil.example", ""},
		{none, "https://app.example", ""},
	} {
		_, header, _ := c.r.call(t, http.MethodGet, PathMetadata, nil, http.Header{"Origin": {c.origin}})
		assert.Equal(t, c.want, header.Get("Access-Control-Allow-Origin"), c.origin)
	}
}
