package verify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/oauth/verify"
)

// An issuer known by its JWKS URL alone (a workload issuer, as a
// Kubernetes cluster's or muster's harness's is) may sign with ES256:
// without a discovery document naming its algorithms, its tokens are
// judged by its key, not refused for not being RS256.
func TestAJWKSIssuerMaySignES256(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "workload", Algorithm: string(jose.ES256), Use: "sig"}}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jwks)
	}))
	t.Cleanup(srv.Close)
	issuer := srv.URL
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "workload"))
	require.NoError(t, err)
	now := time.Now()
	token, err := jwt.Signed(signer).Claims(map[string]any{"iss": issuer, "sub": "alice@example.com", "aud": "http://localhost:8090",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
	require.NoError(t, err)

	v := verifier(t, srv.Client(), nil, verify.Issuer{URL: issuer, JWKSURL: issuer + "/jwks", AcceptedTypes: []string{""}})
	who, err := v.Verify(context.Background(), token)
	require.NoError(t, err)
	assert.Equal(t, "alice@example.com", who.Subject)

	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	forger, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: other}, (&jose.SignerOptions{}).WithHeader("kid", "workload"))
	require.NoError(t, err)
	forged, err := jwt.Signed(forger).Claims(map[string]any{"iss": issuer, "sub": "alice@example.com", "exp": now.Add(time.Hour).Unix()}).Serialize()
	require.NoError(t, err)
	_, err = v.Verify(context.Background(), forged)
	assert.ErrorIs(t, err, verify.ErrInvalidToken, "another key's signature")
}
