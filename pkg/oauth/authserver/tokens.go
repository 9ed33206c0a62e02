package authserver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// CodeExchange redeems musterd's code (once; PKCE checked by zitadel's
// AuthorizeCodeChallenge) for a new family's tokens.
func (s *server) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	as := s.as
	req, err := op.AuthRequestByCode(ctx, as.storage, r.Data.Code)
	if err != nil {
		return nil, err
	}
	rec := req.(authRequest).r
	_ = as.storage.DeleteAuthRequest(ctx, rec.ID)
	if err := op.AuthorizeCodeChallenge(r.Data.CodeVerifier, req.GetCodeChallenge()); err != nil {
		return nil, err
	}
	if r.Client.GetID() != rec.ClientID {
		return nil, oidc.ErrInvalidGrant().WithDescription("the code was issued to another client")
	}
	if r.Data.RedirectURI != rec.RedirectURI {
		return nil, oidc.ErrInvalidGrant().WithDescription("redirect_uri does not correspond")
	}
	if !req.Done() {
		return nil, oidc.ErrInvalidGrant().WithDescription("the login is not complete")
	}
	fam := &familyRecord{ID: random(16), ClientID: rec.ClientID, Subject: rec.Subject, Scopes: rec.Scopes, Upstream: rec.Upstream, Created: as.opts.Now()}
	resp, err := as.mint(ctx, fam)
	if err != nil {
		return nil, err
	}
	return op.NewResponse(resp), nil
}

// RefreshToken rotates a refresh token: the old one is spent, and its
// family gets a new pair. A spent one presented again means it leaked,
// so its whole family is revoked (OAuth 2.1 §4.3.1). The provider's
// tokens are renewed first when they are about to expire; a provider
// that refuses ends the family.
func (s *server) RefreshToken(ctx context.Context, r *op.ClientRequest[oidc.RefreshTokenRequest]) (*op.Response, error) {
	as := s.as
	token := r.Data.RefreshToken
	invalid := oidc.ErrInvalidGrant().WithDescription("the refresh token is invalid, expired or revoked")
	if !strings.HasPrefix(token, refreshPrefix) {
		return nil, invalid
	}
	var rt refreshRecord
	if err := getJSON(ctx, as.opts.Store, kindRefresh+hashed(token), &rt); err != nil {
		if errors.Is(err, errNotFound) {
			return nil, invalid
		}
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if rt.Client != r.Client.GetID() {
		return nil, invalid
	}
	unlock, err := as.lockFamily(ctx, rt.Family)
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	defer unlock()
	// Read again under the lock: a concurrent rotation may have spent it.
	if err := getJSON(ctx, as.opts.Store, kindRefresh+hashed(token), &rt); err != nil {
		return nil, invalid
	}
	if rt.Used {
		as.revokeFamilyLocked(ctx, rt.Family)
		as.opts.Logger.Warn("authserver: a spent refresh token was presented again; its login is revoked", "client", rt.Client)
		return nil, invalid
	}
	var fam familyRecord
	if err := getJSON(ctx, as.opts.Store, kindFamily+rt.Family, &fam); err != nil || fam.Refresh != hashed(token) {
		return nil, invalid
	}
	for _, scope := range r.Data.Scopes {
		if !slices.Contains(fam.Scopes, scope) {
			return nil, oidc.ErrInvalidScope().WithDescription("a refresh cannot widen the scope")
		}
	}
	if fam.Upstream.stale(as.opts.Now()) {
		fresh, err := as.upstream.refresh(ctx, fam.Upstream)
		switch {
		case err != nil && endsLogin(err):
			as.opts.Logger.Warn("authserver: the identity provider did not renew a login; it ends", "error", err)
			as.revokeFamilyLocked(ctx, fam.ID)
			return nil, oidc.ErrInvalidGrant().WithDescription("the login at the identity provider has ended; log in again")
		case err != nil:
			// A provider that cannot be reached, or a passing failure of
			// its, is no end of the login: the refresh token stays
			// unspent, and the client may try again.
			as.opts.Logger.Warn("authserver: the identity provider could not renew a login; the refresh may be retried", "error", err)
			return nil, oidc.ErrServerError().WithDescription("the identity provider could not renew the login just now; try again later")
		}
		fam.Upstream = fresh
		// The provider's answer took time: a revocation may have ended the
		// login meanwhile (in another musterd: this one waits for the lock).
		if !as.familyStands(ctx, fam.ID, token) {
			return nil, invalid
		}
	}
	resp, err := as.mint(ctx, &fam)
	if err != nil {
		return nil, err
	}
	// Spent only now that its successor is kept: a failure before this
	// leaves it good for the client's retry, not a reuse.
	rt.Used = true
	if err := putJSON(ctx, as.opts.Store, kindRefresh+hashed(token), rt, as.opts.SessionDuration); err != nil {
		// The family no longer names it, so it refreshes nothing; only a
		// later reuse of it goes unnoticed.
		as.opts.Logger.Warn("authserver: a rotated refresh token could not be marked spent", "error", err)
	}
	return op.NewResponse(resp), nil
}

// familyStands says whether the family id is still kept with refresh
// (when not empty) as its live refresh token.
func (as *Server) familyStands(ctx context.Context, id, refresh string) bool {
	var fam familyRecord
	if err := getJSON(ctx, as.opts.Store, kindFamily+id, &fam); err != nil {
		return false
	}
	return refresh == "" || fam.Refresh == hashed(refresh)
}

// endsLogin says whether the provider's failure to renew a login's tokens
// ends it: the provider refused them, or there is nothing to renew them
// with. Anything else (unreachable, slow, a 5xx) may pass.
func endsLogin(err error) bool {
	return isRefusal(err) || errors.Is(err, errNoUpstreamRefresh)
}

// Revocation revokes an access token, or a refresh token with its whole
// family (RFC 7009 §2.1). A token that is not one of musterd's, or not
// the client's, is no error: the answer does not tell.
func (s *server) Revocation(ctx context.Context, r *op.ClientRequest[oidc.RevocationRequest]) (*op.Response, error) {
	as := s.as
	token := r.Data.Token
	switch {
	case strings.HasPrefix(token, accessPrefix):
		var at accessRecord
		if getJSON(ctx, as.opts.Store, kindAccess+hashed(token), &at) == nil && at.Client == r.Client.GetID() {
			_ = as.opts.Store.Delete(ctx, kindAccess+hashed(token))
		}
	case strings.HasPrefix(token, refreshPrefix):
		var rt refreshRecord
		if getJSON(ctx, as.opts.Store, kindRefresh+hashed(token), &rt) == nil && rt.Client == r.Client.GetID() {
			as.revokeFamily(ctx, rt.Family)
		}
	}
	return op.NewResponse(struct{}{}), nil
}

// mint issues fam a new access and refresh token and keeps fam. The
// access token lasts AccessTokenTTL, or less when the provider's token
// expires sooner; the refresh token and the family SessionDuration from
// now.
func (as *Server) mint(ctx context.Context, fam *familyRecord) (*oidc.AccessTokenResponse, error) {
	now := as.opts.Now()
	ttl := as.opts.AccessTokenTTL
	if left := fam.Upstream.Expiry.Sub(now); !fam.Upstream.Expiry.IsZero() && left < ttl {
		ttl = max(left, time.Second)
	}
	access, refresh := accessPrefix+random(32), refreshPrefix+random(32)
	kv := as.opts.Store
	// The family is kept last: until then it names its previous refresh
	// token, which a failure here leaves good for a retry; the new tokens,
	// never handed out, are left to expire.
	if err := putJSON(ctx, kv, kindRefresh+hashed(refresh), refreshRecord{Family: fam.ID, Client: fam.ClientID}, as.opts.SessionDuration); err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	at := accessRecord{Family: fam.ID, Expiry: now.Add(ttl), Scopes: fam.Scopes, Client: fam.ClientID, Subject: fam.Subject}
	if err := putJSON(ctx, kv, kindAccess+hashed(access), at, ttl); err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	next := *fam
	next.Refresh = hashed(refresh)
	if err := putJSON(ctx, kv, kindFamily+fam.ID, next, as.opts.SessionDuration); err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	*fam = next
	return &oidc.AccessTokenResponse{
		AccessToken: access, TokenType: oidc.BearerToken, RefreshToken: refresh,
		ExpiresIn: uint64(ttl / time.Second), IDToken: fam.Upstream.IDToken, Scope: fam.Scopes,
	}, nil
}

// revokeFamily ends a login: its record goes, and with it every access
// token of it (Session looks the family up) and its live refresh token.
// It waits for a rotation or renewal of the family under way in this
// process, which would otherwise keep the family again after it.
func (as *Server) revokeFamily(ctx context.Context, id string) {
	// A revocation is carried out even if its caller goes meanwhile.
	ctx = context.WithoutCancel(ctx)
	unlock, _ := as.lockFamily(ctx, id) // no error: ctx never ends
	defer unlock()
	as.revokeFamilyLocked(ctx, id)
}

// revokeFamilyLocked is revokeFamily for a caller holding the family's
// lock.
func (as *Server) revokeFamilyLocked(ctx context.Context, id string) {
	var fam familyRecord
	keys := []string{kindFamily + id}
	if getJSON(ctx, as.opts.Store, kindFamily+id, &fam) == nil {
		if fam.Refresh != "" {
			keys = append(keys, kindRefresh+fam.Refresh)
		}
		as.noteRevokedID(ctx, fam)
	}
	if err := as.opts.Store.Delete(ctx, keys...); err != nil {
		as.opts.Logger.Warn("authserver: a login could not be revoked", "error", err)
	}
}

// lockFamily serialises the changes of one family in this process: its
// rotations, its renewals at the provider and its revocation. Waiting
// for the lock ends with ctx, so that a renewal stalled at the provider
// holds up another request no longer than that request's own bound.
func (as *Server) lockFamily(ctx context.Context, id string) (unlock func(), err error) {
	as.familiesMu.Lock()
	l, ok := as.families[id]
	if !ok {
		l = &familyLock{held: make(chan struct{}, 1)}
		as.families[id] = l
	}
	l.waiters++
	as.familiesMu.Unlock()
	leave := func() {
		as.familiesMu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(as.families, id)
		}
		as.familiesMu.Unlock()
	}
	select {
	case l.held <- struct{}{}:
		return func() { <-l.held; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// familyLock is a family's lock (held while its channel is full), with
// how many hold or wait for it.
type familyLock struct {
	held    chan struct{}
	waiters int
}
