package identity

import "net/http"

// Authenticator says who an HTTP request comes from: the one check the
// API and the MCP endpoint share, so that the two cannot disagree about
// who is let in. The static token (api/shared.Bearer) and musterd's OAuth
// (package oauth/verify) implement it.
type Authenticator interface {
	// Authenticate returns the caller, or a Challenge when the request
	// must not go on: it carries no credential, or one that is no good.
	// The caller of a static token is the zero Identity: nobody in
	// particular.
	Authenticate(r *http.Request) (Identity, *Challenge)
}

// Challenge is an Authenticator's refusal, as the HTTP answer gives it.
type Challenge struct {
	// Status is the HTTP status: 401, or 403 for a credential that is
	// good but not enough.
	Status int
	// WWWAuthenticate is the header's value (RFC 6750, RFC 9728).
	WWWAuthenticate string
	// Reason says what is wrong, for the body; never the credential.
	Reason string
}
