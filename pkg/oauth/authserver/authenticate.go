package authserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/musterd/musterd/pkg/identity"
)

// AuthenticatorOptions configures Server.Authenticator.
type AuthenticatorOptions struct {
	// Others checks the tokens that are not musterd's own (the provider's
	// and trusted issuers' JWTs). Required.
	Others identity.Authenticator
	// ResourceMetadataURL is musterd's protected-resource metadata, named
	// in the challenge to a bad token of musterd's. Required.
	ResourceMetadataURL string
}

// Authenticator is the check of callers' tokens with musterd's own
// access tokens first: one of them is the login's user (Subject and
// Issuer the provider's, Session its family), or a 401 challenge when it
// is unknown, expired or revoked, at musterd or at the provider
// (upstreamcheck.go); any other token is Others' to judge.
func (s *Server) Authenticator(opts AuthenticatorOptions) *Authenticator {
	return &Authenticator{s: s, opts: opts}
}

// Authenticator is Server.Authenticator's result.
type Authenticator struct {
	s    *Server
	opts AuthenticatorOptions
}

var _ identity.Authenticator = (*Authenticator)(nil)

func (a *Authenticator) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	who, _, challenge := a.authenticate(r, false)
	return who, challenge
}

// AuthenticateForwarding is Authenticate, and says which token a server
// that takes the caller's token (forwardToken) gets: for musterd's own
// token, the provider's ID token of its login, renewed when about to
// expire; for another, the token presented.
func (a *Authenticator) AuthenticateForwarding(r *http.Request) (identity.Identity, string, *identity.Challenge) {
	return a.authenticate(r, true)
}

func (a *Authenticator) authenticate(r *http.Request, forwarding bool) (identity.Identity, string, *identity.Challenge) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || !IsOwn(token) {
		// Only a JWT can be an ID token: an opaque token costs no lookup.
		if strings.Count(token, ".") == 2 && a.s.idTokenRevoked(r.Context(), token) {
			return identity.Identity{}, "", a.challenge("the login this ID token came with has ended: log in again")
		}
		who, challenge := a.opts.Others.Authenticate(r)
		return who, token, challenge
	}
	sess, err := a.s.Lookup(r.Context(), token)
	if err != nil {
		reason := err.Error()
		if !errors.Is(err, ErrInvalidToken) {
			a.s.opts.Logger.Warn("authserver: an access token could not be checked", "error", err)
			reason = "the access token could not be checked"
		}
		return identity.Identity{}, "", a.challenge(reason)
	}
	who := identity.Identity{Subject: sess.Subject, Issuer: sess.Issuer, Session: sess.Family}
	if err := a.s.stands(r.Context(), sess.Family); errors.Is(err, errUpstreamRevoked) {
		a.s.revokeFamily(r.Context(), sess.Family)
		a.s.opts.Logger.Info("authserver: a login its identity provider ended is over", "user", identity.LogTag(who.Owner()))
		return identity.Identity{}, "", a.challenge("the login was ended at the identity provider: log in again")
	} else if err != nil {
		a.s.opts.Logger.Warn("authserver: the identity provider could not say whether a login stands; it stands",
			"user", identity.LogTag(who.Owner()), "error", err)
	}
	if !forwarding {
		return who, "", nil
	}
	id, err := a.s.UpstreamIDToken(r.Context(), sess.Family)
	if err != nil {
		// The caller is who they are; only what servers get is missing,
		// and they say so themselves.
		a.s.opts.Logger.Warn("authserver: a login's ID token could not be renewed at the identity provider",
			"user", identity.LogTag(who.Owner()), "error", err)
	}
	return who, id, nil
}

// challenge is the 401 for a bad token of musterd's (RFC 6750, RFC 9728).
func (a *Authenticator) challenge(reason string) *identity.Challenge {
	return &identity.Challenge{
		Status: http.StatusUnauthorized,
		WWWAuthenticate: fmt.Sprintf("Bearer resource_metadata=%q, error=%q, error_description=%q",
			a.opts.ResourceMetadataURL, "invalid_token", reason),
		Reason: reason,
	}
}
