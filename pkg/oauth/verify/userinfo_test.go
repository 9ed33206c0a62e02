package verify_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/pkg/oauth/verify"
)

// switchable passes requests on to a real transport until it is cut,
// then fails them as a provider that is down does.
type switchable struct {
	next http.RoundTripper
	down atomic.Bool
}

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.down.Load() {
		return nil, errors.New("connection refused")
	}
	return s.next.RoundTrip(r)
}

// clock is a test's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time                { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration)           { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }
func newClock(start time.Time) *clock          { return &clock{now: start} }
func (c *clock) set(t time.Time)               { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }
func logInto(buf *logtest.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// userInfoVerifier trusts d, whose userinfo endpoint vouches for tokens
// that are no JWT, reached through link, on clock.
func userInfoVerifier(t *testing.T, d *dextest.Dex, link *switchable, c *clock, log *slog.Logger) *verify.Verifier {
	t.Helper()
	v, err := verify.New(verify.Options{
		Issuers:        []verify.Issuer{{URL: d.Issuer, Audiences: []string{dextest.ClientMusterd}}},
		HTTPClient:     &http.Client{Transport: link, Timeout: 30 * time.Second},
		Now:            c.Now,
		UserInfoIssuer: d.Issuer,
		Log:            log,
	})
	require.NoError(t, err)
	return v
}

// Against a real Dex: its userinfo endpoint names the user of its access
// token, as the ID token does; the answer is reused for 60 s, by a digest
// of the token, and then asked again: a provider that is down then is a
// refusal that says so, in the error and in the log, never with the token.
func TestUserInfoVouchesForAProvidersAccessToken(t *testing.T) {
	d := dextest.Start(t, dextest.Options{TLS: true})
	link := &switchable{next: d.HTTPClient.Transport}
	c := newClock(time.Now())
	var log logtest.Buffer
	v := userInfoVerifier(t, d, link, c, logInto(&log))
	ctx := context.Background()

	token := d.PasswordToken(t, dextest.ClientMusterd, "alice")
	id, _ := token.Extra("id_token").(string)
	who, err := v.ViaUserInfo(ctx, token.AccessToken)
	require.NoError(t, err)
	assert.Equal(t, claimsOf(t, id)["sub"], who.Subject)
	assert.Equal(t, d.Issuer, who.Issuer)
	assert.Equal(t, 1, v.Cached())

	link.down.Store(true)
	c.Add(59 * time.Second)
	again, err := v.ViaUserInfo(ctx, token.AccessToken)
	require.NoError(t, err, "answered from the cache: the provider is not asked")
	assert.Equal(t, who, again)

	c.Add(time.Second)
	_, err = v.ViaUserInfo(ctx, token.AccessToken)
	require.ErrorIs(t, err, verify.ErrInvalidToken)
	assert.Contains(t, err.Error(), "the provider cannot be reached")
	assert.Contains(t, log.String(), "cannot vouch for it")
	assert.Contains(t, log.String(), "connection refused")
	assert.NotContains(t, err.Error()+log.String(), token.AccessToken)

	link.down.Store(false)
	_, err = v.ViaUserInfo(ctx, token.AccessToken)
	require.NoError(t, err, "back once the provider is")
}

// The answer is never reused past the token's expiry, which Dex's
// userinfo gives.
func TestUserInfosAnswerEndsWithTheToken(t *testing.T) {
	d := dextest.Start(t, dextest.Options{TLS: true, IDTokenExpiry: 20 * time.Second})
	link := &switchable{next: d.HTTPClient.Transport}
	c := newClock(time.Now())
	v := userInfoVerifier(t, d, link, c, nil)
	ctx := context.Background()

	token := d.PasswordToken(t, dextest.ClientMusterd, "bob")
	_, err := v.ViaUserInfo(ctx, token.AccessToken)
	require.NoError(t, err)
	link.down.Store(true)
	c.set(token.Expiry.Add(-2 * time.Second))
	_, err = v.ViaUserInfo(ctx, token.AccessToken)
	require.NoError(t, err, "still alive: from the cache")
	c.set(token.Expiry.Add(2 * time.Second))
	_, err = v.ViaUserInfo(ctx, token.AccessToken)
	require.ErrorIs(t, err, verify.ErrInvalidToken, "past its expiry the provider is asked again")
}

// A token that is no JWT goes to the provider, which refuses one it did
// not issue: a refusal with the usual challenge. Without a userinfo
// issuer it is refused at once.
func TestATokenThatIsNoJWTIsTheProvidersToJudge(t *testing.T) {
	d := dextest.Start(t, dextest.Options{TLS: true})
	link := &switchable{next: d.HTTPClient.Transport}
	c := newClock(time.Now())
	v := userInfoVerifier(t, d, link, c, nil)
	ctx := context.Background()
	const opaque = "opaque-token-dex-never-issued"

	_, err := v.Verify(ctx, opaque)
	require.ErrorIs(t, err, verify.ErrInvalidToken)
	assert.Contains(t, err.Error(), "refused by the userinfo endpoint of "+d.Issuer)
	assert.NotContains(t, err.Error(), opaque)
	assert.Equal(t, 0, v.Cached(), "a refusal is not kept")

	a := v.Authenticator(verify.AuthenticatorOptions{ResourceMetadataURL: "https://musterd.test/.well-known/oauth-protected-resource"})
	r, err := http.NewRequest(http.MethodPost, "https://musterd.test/mcp", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer "+opaque)
	_, challenge := a.Authenticate(r)
	require.NotNil(t, challenge)
	assert.Equal(t, http.StatusUnauthorized, challenge.Status)
	assert.Contains(t, challenge.WWWAuthenticate, `error="invalid_token"`)

	// A JWT is never sent there: Dex's access token, presented to the JWT
	// check, is judged by it (its audience is musterd's).
	token := d.PasswordToken(t, dextest.ClientOther, "alice")
	_, err = v.Verify(ctx, token.AccessToken)
	require.ErrorIs(t, err, verify.ErrInvalidToken)
	assert.Contains(t, err.Error(), "audience")

	plain := verifier(t, d.HTTPClient, nil, verify.Issuer{URL: d.Issuer})
	_, err = plain.Verify(ctx, opaque)
	assert.EqualError(t, err, "invalid token: not a signed JWT")
}

func TestTheUserInfoIssuerIsOneOfTheIssuers(t *testing.T) {
	_, err := verify.New(verify.Options{Issuers: []verify.Issuer{{URL: "https://a"}}, UserInfoIssuer: "https://b"})
	assert.EqualError(t, err, "verify: the userinfo issuer https://b is not one of the issuers")
}

// hanging is a provider whose discovery answers and whose userinfo
// endpoint never does.
type hanging struct{}

func (hanging) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration") {
		body := `{"issuer":"https://idp.test","authorization_endpoint":"https://idp.test/auth","token_endpoint":"https://idp.test/token",` +
			`"jwks_uri":"https://idp.test/keys","userinfo_endpoint":"https://idp.test/userinfo","id_token_signing_alg_values_supported":["RS256"]}`
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A provider that does not answer is a refusal after UserInfoTimeout, not
// a request that hangs.
func TestAProviderThatHangsIsARefusalInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log logtest.Buffer
		v, err := verify.New(verify.Options{
			Issuers:         []verify.Issuer{{URL: "https://idp.test"}},
			HTTPClient:      &http.Client{Transport: hanging{}},
			UserInfoIssuer:  "https://idp.test",
			UserInfoTimeout: 5 * time.Second,
			Log:             logInto(&log),
		})
		require.NoError(t, err)
		start := time.Now()
		_, err = v.Verify(context.Background(), "opaque")
		require.ErrorIs(t, err, verify.ErrInvalidToken)
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Contains(t, err.Error(), "the provider cannot be reached")
		assert.Contains(t, log.String(), "deadline exceeded")
	})
}

// IsJWT tells a signed JWT (which a server downstream can verify) from a
// token that is not one (which only its provider can make sense of).
func TestIsJWT(t *testing.T) {
	d := dextest.Start(t, dextest.Options{})
	token := d.PasswordToken(t, dextest.ClientMusterd, "alice")
	id, _ := token.Extra("id_token").(string)
	assert.True(t, verify.IsJWT(id))
	assert.True(t, verify.IsJWT(token.AccessToken), "Dex's access tokens are JWTs")
	assert.True(t, verify.IsJWT(forge(t, map[string]any{"sub": "x"})), "whoever signed it")
	for _, opaque := range []string{"", "opaque-token", "a.b.c", token.RefreshToken} {
		assert.False(t, verify.IsJWT(opaque), opaque)
	}
}
