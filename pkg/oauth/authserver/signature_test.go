package authserver

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
)

// Where the provider's token endpoint is not reached over TLS, the ID
// token's signature is what vouches for it: a login with Dex's own
// token goes through; one whose ID token was re-signed on the way by
// another key, claims unchanged, is refused back to the client.
func TestWithoutTLSTheIDTokensSignatureIsChecked(t *testing.T) {
	forge := false
	r := startRig(t, dextest.Options{}, func(o *Options) {
		base := o.HTTPClient.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		o.HTTPClient = &http.Client{Timeout: o.HTTPClient.Timeout, Transport: resigning{base: base, on: &forge}}
	})
	require.True(t, strings.HasPrefix(r.dex.Issuer, "http://"))
	client := r.publicClient(t)
	back := r.login(t, client, "alice", oauth2.GenerateVerifier())
	assert.NotEmpty(t, back.Query().Get("code"), "Dex's own ID token: %s", back)

	forge = true
	back = r.login(t, client, "alice", oauth2.GenerateVerifier())
	assert.Equal(t, "access_denied", back.Query().Get("error"), back.String())
	assert.Empty(t, back.Query().Get("code"))
}

// resigning re-signs, when on, the ID token of token responses with a key
// of its own, keeping its claims: a forgery in the provider's name.
type resigning struct {
	base http.RoundTripper
	on   *bool
}

func (rs resigning) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rs.base.RoundTrip(req)
	if err != nil || !*rs.on || !strings.HasSuffix(req.URL.Path, "/token") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if json.Unmarshal(body, &out) == nil {
		if raw, ok := out["id_token"].(string); ok {
			out["id_token"] = resign(raw)
			body, _ = json.Marshal(out)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

func resign(raw string) string {
	parsed, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return raw
	}
	var claims map[string]any
	if parsed.UnsafeClaimsWithoutVerification(&claims) != nil {
		return raw
	}
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	kid := parsed.Headers[0].KeyID // the provider's key ID, another key
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	if err != nil {
		return raw
	}
	forged, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return raw
	}
	return forged
}
