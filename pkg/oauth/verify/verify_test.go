package verify_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/oauth/verify"
)

// idToken is the ID token Dex issues client for user's password.
func idToken(t *testing.T, d *dextest.Dex, client, user string) string {
	t.Helper()
	raw, _ := d.PasswordToken(t, client, user).Extra("id_token").(string)
	require.NotEmpty(t, raw, "Dex issued no ID token")
	return raw
}

// claimsOf reads a token's claims, as a test may, unverified.
func claimsOf(t *testing.T, raw string) map[string]any {
	t.Helper()
	parts := strings.Split(raw, ".")
	require.Len(t, parts, 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, json.Unmarshal(payload, &claims))
	return claims
}

func verifier(t *testing.T, client *http.Client, now func() time.Time, issuers ...verify.Issuer) *verify.Verifier {
	t.Helper()
	v, err := verify.New(verify.Options{Issuers: issuers, HTTPClient: client, Now: now})
	require.NoError(t, err)
	return v
}

// Against a real Dex: its token for musterd's audience names its user;
// one for another audience, one from an issuer not trusted, one signed by
// another key in Dex's name, one changed after signing, and one expired
// are refused, each saying why, and no refusal holds the token.
func TestTokensOfTheTrustedIssuerOnlyNameTheirUser(t *testing.T) {
	trusted := dextest.Start(t, dextest.Options{TLS: true})
	untrusted := dextest.Start(t, dextest.Options{TLS: true})
	// One client for both Dexes, trusting both CAs: the untrusted issuer's
	// tokens are refused for its not being trusted, not for its TLS.
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(mustRead(t, trusted.CAFile)))
	require.True(t, roots.AppendCertsFromPEM(mustRead(t, untrusted.CAFile)))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	ctx := context.Background()
	v := verifier(t, client, nil, verify.Issuer{URL: trusted.Issuer, Audiences: []string{dextest.ClientMusterd}})

	good := idToken(t, trusted, dextest.ClientMusterd, "alice")
	who, err := v.Verify(ctx, good)
	require.NoError(t, err)
	assert.Equal(t, claimsOf(t, good)["sub"], who.Subject)
	assert.Equal(t, trusted.Issuer, who.Issuer)
	bob, err := v.Verify(ctx, idToken(t, trusted, dextest.ClientMusterd, "bob"))
	require.NoError(t, err)
	assert.NotEqual(t, who.Owner(), bob.Owner())

	forged := forge(t, claimsOf(t, good))
	tampered := tamper(t, good, func(c map[string]any) {
		c["sub"] = claimsOf(t, idToken(t, trusted, dextest.ClientMusterd, "bob"))["sub"]
	})
	for name, c := range map[string]struct {
		token, why string
		now        func() time.Time
	}{
		"another audience":     {token: idToken(t, trusted, dextest.ClientOther, "alice"), why: "audience"},
		"an untrusted issuer":  {token: idToken(t, untrusted, dextest.ClientMusterd, "alice"), why: "issuer \"" + untrusted.Issuer + "\" is not trusted"},
		"another key":          {token: forged, why: "verification against " + trusted.Issuer + " failed"},
		"changed after signed": {token: tampered, why: "verification against " + trusted.Issuer + " failed"},
		"expired":              {token: good, why: "expired", now: func() time.Time { return time.Now().Add(25 * time.Hour) }},
		"not a JWT":            {token: "opaque-token-value", why: "not a signed JWT"},
	} {
		check := v
		if c.now != nil {
			check = verifier(t, client, c.now, verify.Issuer{URL: trusted.Issuer, Audiences: []string{dextest.ClientMusterd}})
		}
		_, err := check.Verify(ctx, c.token)
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, verify.ErrInvalidToken), name)
		assert.Contains(t, err.Error(), c.why, name)
		assert.NotContains(t, err.Error(), c.token, "%s: the error holds no token", name)
	}
}

// An issuer's terms: the claim that names the user, claims that must
// match, the typ headers accepted, and keys at a JWKS URL of its own.
func TestAnIssuersTerms(t *testing.T) {
	d := dextest.Start(t, dextest.Options{TLS: true})
	ctx := context.Background()
	token := idToken(t, d, dextest.ClientMusterd, "alice")

	byEmail := verifier(t, d.HTTPClient, nil, verify.Issuer{URL: d.Issuer, JWKSURL: d.Issuer + "/keys",
		SubjectClaim: "email", AllowedClaims: map[string]string{"email": "*@example.com"}})
	who, err := byEmail.Verify(ctx, token)
	require.NoError(t, err)
	assert.Equal(t, "alice@example.com", who.Subject)

	for name, is := range map[string]verify.Issuer{
		"a claim that does not match": {URL: d.Issuer, AllowedClaims: map[string]string{"email": "*@example.org"}},
		"a subject claim it lacks":    {URL: d.Issuer, SubjectClaim: "employee_id"},
		"a typ it does not accept":    {URL: d.Issuer, AcceptedTypes: []string{"at+jwt"}},
	} {
		_, err := verifier(t, d.HTTPClient, nil, is).Verify(ctx, token)
		assert.ErrorIs(t, err, verify.ErrInvalidToken, name)
	}
}

func TestAVerifierNeedsItsIssuers(t *testing.T) {
	_, err := verify.New(verify.Options{})
	assert.EqualError(t, err, "verify: no issuer to trust")
	_, err = verify.New(verify.Options{Issuers: []verify.Issuer{{URL: "https://a"}, {URL: "https://a"}}})
	assert.EqualError(t, err, "verify: issuers[1]: https://a is listed twice")
}

// forge signs claims with a key of its own, under a key ID Dex does not
// have.
func forge(t *testing.T, claims map[string]any) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "forged"}}, nil)
	require.NoError(t, err)
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return raw
}

// tamper changes a signed token's claims, keeping its signature.
func tamper(t *testing.T, raw string, change func(map[string]any)) string {
	t.Helper()
	claims := claimsOf(t, raw)
	change(claims)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	parts := strings.Split(raw, ".")
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return data
}

// As the check of requests: no token is a challenge naming the
// metadata; a bad one says invalid_token and why; a good one names its
// user.
func TestTheAuthenticatorChallengesAndNames(t *testing.T) {
	d := dextest.Start(t, dextest.Options{TLS: true})
	const metadata = "https://musterd.test/.well-known/oauth-protected-resource"
	a := verifier(t, d.HTTPClient, nil, verify.Issuer{URL: d.Issuer, Audiences: []string{dextest.ClientMusterd}}).
		Authenticator(verify.AuthenticatorOptions{ResourceMetadataURL: metadata})
	request := func(authorization string) *http.Request {
		r, err := http.NewRequest(http.MethodPost, "https://musterd.test/mcp", nil)
		require.NoError(t, err)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		return r
	}

	_, challenge := a.Authenticate(request(""))
	require.NotNil(t, challenge)
	assert.Equal(t, http.StatusUnauthorized, challenge.Status)
	assert.Equal(t, `Bearer resource_metadata="`+metadata+`"`, challenge.WWWAuthenticate)

	other := idToken(t, d, dextest.ClientOther, "alice")
	_, challenge = a.Authenticate(request("Bearer " + other))
	require.NotNil(t, challenge)
	assert.Contains(t, challenge.WWWAuthenticate, `error="invalid_token", error_description="invalid token: audience`)
	assert.NotContains(t, challenge.WWWAuthenticate+challenge.Reason, other)

	good := idToken(t, d, dextest.ClientMusterd, "alice")
	who, challenge := a.Authenticate(request("Bearer " + good))
	require.Nil(t, challenge)
	assert.Equal(t, claimsOf(t, good)["sub"], who.Subject)
}
