package authserver

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/musterd/musterd/pkg/identity"
)

// beginUpstream starts the user's login at the provider for the stored
// request id: a fresh state, nonce and PKCE verifier, kept for the
// callback under the state's hash, used once.
func (s *Server) beginUpstream(ctx context.Context, id string) (string, error) {
	state, nonce, verifier := random(32), random(32), oauth2.GenerateVerifier()
	to, err := s.upstream.authURL(ctx, state, nonce, verifier)
	if err != nil {
		return "", err
	}
	if err := putJSON(ctx, s.opts.Store, kindState+hashed(state), stateRecord{Request: id, Verifier: verifier, Nonce: nonce}, RequestTTL); err != nil {
		return "", err
	}
	return to, nil
}

// callback is where the provider sends the user back (PathCallback). A
// request whose state is not one of musterd's logins under way is
// nothing of musterd's: it is refused with a page, and no client is sent
// anything. Otherwise the provider's code is redeemed, its ID token
// checked, and the user goes back to the client with musterd's code,
// the client's state and musterd's iss (RFC 9207).
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	var st stateRecord
	err := errNotFound
	if state := q.Get("state"); state != "" {
		err = takeJSON(ctx, s.opts.Store, kindState+hashed(state), &st)
	}
	if err != nil {
		if !errors.Is(err, errNotFound) {
			s.opts.Logger.Warn("authserver: a login's state could not be read", "error", err)
		}
		page(w, http.StatusBadRequest, "This login is unknown or has expired. Start it again from your client.")
		return
	}
	rec, err := s.storage.request(ctx, st.Request)
	if err != nil {
		page(w, http.StatusBadRequest, "This login has expired. Start it again from your client.")
		return
	}
	back := func(e *oidc.Error) {
		redirect, err := op.TryErrorRedirect(ctx, authRequest{rec}.oidc(), e, s.provider.Encoder(), nil)
		if err != nil {
			page(w, http.StatusBadRequest, "The login failed and the client cannot be told.")
			return
		}
		loc, _ := url.Parse(redirect.URL)
		http.Redirect(w, r, addIss(loc, s.opts.Issuer), http.StatusFound)
	}
	if iss := q.Get("iss"); iss != "" && iss != s.opts.Upstream.Issuer {
		// A mix-up (RFC 9207): the answer is another server's.
		s.opts.Logger.Warn("authserver: a login's callback names another issuer; refused", "iss", iss)
		back(oidc.ErrAccessDenied().WithDescription("the identity provider's answer names another issuer"))
		return
	}
	if e := q.Get("error"); e != "" {
		back(oidc.ErrAccessDenied().WithDescription("the identity provider refused the login: %s", e))
		return
	}
	subject, tokens, err := s.upstream.exchange(ctx, q.Get("code"), st.Verifier, st.Nonce)
	if err != nil {
		s.opts.Logger.Warn("authserver: a login at the identity provider failed", "error", err)
		back(oidc.ErrAccessDenied().WithDescription("the login at the identity provider failed"))
		return
	}
	rec.Subject, rec.Upstream, rec.AuthTime = subject, tokens, s.opts.Now()
	if err := putJSON(ctx, s.opts.Store, kindRequest+rec.ID, rec, RequestTTL); err != nil {
		back(oidc.ErrServerError().WithDescription("the login could not be kept"))
		return
	}
	to, err := op.BuildAuthResponseCallbackURL(ctx, authRequest{rec}, s.provider)
	if err != nil {
		back(oidc.ErrServerError().WithDescription("the code could not be issued"))
		return
	}
	loc, err := url.Parse(to)
	if err != nil {
		back(oidc.ErrServerError())
		return
	}
	owner := identity.Identity{Subject: subject, Issuer: s.opts.Upstream.Issuer}.Owner()
	s.opts.Logger.Info("authserver: a user logged in at the identity provider", "user", identity.LogTag(owner), "client", rec.ClientID)
	http.Redirect(w, r, addIss(loc, s.opts.Issuer), http.StatusFound)
}

// oidc is the request as zitadel's error redirect reads it.
func (a authRequest) oidc() *oidc.AuthRequest {
	return &oidc.AuthRequest{ClientID: a.r.ClientID, RedirectURI: a.r.RedirectURI, State: a.r.State,
		ResponseType: oidc.ResponseType(a.r.ResponseType), ResponseMode: oidc.ResponseMode(a.r.ResponseMode)}
}

// page answers a browser with a short text.
func page(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>musterd</title><p>%s</p>\n", html.EscapeString(text))
}
