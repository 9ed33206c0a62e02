package verify

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/musterd/musterd/pkg/identity"
)

// AuthenticatorOptions configures Verifier.Authenticator.
type AuthenticatorOptions struct {
	// ResourceMetadataURL is musterd's protected-resource metadata (RFC
	// 9728), which every challenge names so that a client can find where
	// to log in. Required.
	ResourceMetadataURL string
	// Scopes, when any, are named in the challenge (scope=…). Default:
	// none.
	Scopes []string
}

// Authenticator returns v as the check of requests: a request's bearer
// token must verify. A request without one, or with one that does not,
// gets a 401 whose challenge names the protected-resource metadata, with
// error="invalid_token" and the reason for a bad one (RFC 6750, and MCP's
// authorization).
func (v *Verifier) Authenticator(opts AuthenticatorOptions) identity.Authenticator {
	return authenticator{v: v, opts: opts}
}

type authenticator struct {
	v    *Verifier
	opts AuthenticatorOptions
}

func (a authenticator) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return identity.Identity{}, a.challenge("", "Missing Authorization header")
	}
	who, err := a.v.Verify(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return identity.Identity{}, a.challenge("invalid_token", err.Error())
	}
	return who, nil
}

// challenge is the refusal naming the metadata, and, for a bad token,
// the error and why.
func (a authenticator) challenge(code, reason string) *identity.Challenge {
	params := []string{fmt.Sprintf("resource_metadata=%q", a.opts.ResourceMetadataURL)}
	if len(a.opts.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(a.opts.Scopes, " ")))
	}
	if code != "" {
		params = append(params, fmt.Sprintf("error=%q", code), fmt.Sprintf("error_description=%q", reason))
	}
	return &identity.Challenge{Status: http.StatusUnauthorized, WWWAuthenticate: "Bearer " + strings.Join(params, ", "), Reason: reason}
}
