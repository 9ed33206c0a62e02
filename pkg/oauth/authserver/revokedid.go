package authserver

import (
	"context"
)

// The provider's ID token of a login goes to the client with musterd's
// tokens (as muster gives it), and is itself a token musterd takes: its
// audience is musterd's client at the provider. So a login's end ends it
// too: revokeFamily notes its digest, kept until it expires, and the
// Authenticator refuses a token so noted before any other check.

// noteRevokedID notes the ID token of fam, whose login ended.
func (s *Server) noteRevokedID(ctx context.Context, fam familyRecord) {
	if fam.Upstream.IDToken == "" {
		return
	}
	ttl := fam.Upstream.IDExpiry.Sub(s.opts.Now())
	if fam.Upstream.IDExpiry.IsZero() {
		ttl = s.opts.SessionDuration
	}
	if ttl <= 0 {
		return // expired: nobody takes it
	}
	if err := s.opts.Store.Put(ctx, kindRevokedID+hashed(fam.Upstream.IDToken), []byte{1}, ttl); err != nil {
		s.opts.Logger.Warn("authserver: an ended login's ID token could not be noted as revoked", "error", err)
	}
}

// idTokenRevoked reports whether token is the ID token of a login that
// ended; a store that cannot say is taken as no (and logged).
func (s *Server) idTokenRevoked(ctx context.Context, token string) bool {
	_, found, err := s.opts.Store.Get(ctx, kindRevokedID+hashed(token))
	if err != nil {
		s.opts.Logger.Warn("authserver: whether a token is an ended login's ID token could not be read", "error", err)
	}
	return found
}
