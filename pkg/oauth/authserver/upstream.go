package authserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// upstream is musterd's login at its identity provider: the authorization
// code flow with PKCE (S256) and a nonce, through golang.org/x/oauth2,
// and the ID token's check through go-oidc. The provider's discovery is
// fetched at the first login and kept once it succeeded.
type upstream struct {
	opts     Upstream
	redirect string
	client   *http.Client
	now      func() time.Time

	mu       sync.Mutex
	provider *oidc.Provider
}

// discover returns the provider, fetching its discovery document if no
// fetch has succeeded yet. The fetch is made outside the lock, so that a
// slow provider holds up no caller beyond its own context: concurrent
// first callers may each fetch, and the first success is kept.
func (u *upstream) discover(ctx context.Context) (*oidc.Provider, error) {
	u.mu.Lock()
	p := u.provider
	u.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, u.client), u.opts.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the identity provider %s: %w", u.opts.Issuer, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.provider == nil {
		u.provider = p
	}
	return u.provider, nil
}

func (u *upstream) config(p *oidc.Provider) *oauth2.Config {
	scopes := slices.Clone(u.opts.Scopes)
	if u.opts.ExtraScopes != nil {
		for _, s := range u.opts.ExtraScopes() {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	return &oauth2.Config{
		ClientID: u.opts.ClientID, ClientSecret: u.opts.ClientSecret,
		Endpoint: p.Endpoint(), RedirectURL: u.redirect, Scopes: scopes,
	}
}

// authURL is where a user logs in at the provider for one login.
func (u *upstream) authURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	p, err := u.discover(ctx)
	if err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)}
	if u.opts.ConnectorID != "" {
		opts = append(opts, oauth2.SetAuthURLParam("connector_id", u.opts.ConnectorID))
	}
	return u.config(p).AuthCodeURL(state, opts...), nil
}

var (
	// errUpstream is a login the provider did not complete.
	errUpstream = errors.New("the identity provider refused the login")
	// errNoUpstreamRefresh is a login the provider gave no refresh token
	// for: it cannot be renewed.
	errNoUpstreamRefresh = fmt.Errorf("%w: the provider gave no refresh token (offline_access)", errUpstream)
)

// exchange redeems the provider's code, checks the ID token (nonce
// included), and returns its subject with the tokens.
func (u *upstream) exchange(ctx context.Context, code, verifier, nonce string) (string, upstreamTokens, error) {
	p, err := u.discover(ctx)
	if err != nil {
		return "", upstreamTokens{}, err
	}
	tok, err := u.config(p).Exchange(oidc.ClientContext(ctx, u.client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return "", upstreamTokens{}, fmt.Errorf("%w: the code's exchange: %w", errUpstream, redactOAuth(err))
	}
	return u.tokens(ctx, p, tok, nonce, "")
}

// refresh renews a login's tokens at the provider with its refresh token.
func (u *upstream) refresh(ctx context.Context, old upstreamTokens) (upstreamTokens, error) {
	if old.RefreshToken == "" {
		return upstreamTokens{}, errNoUpstreamRefresh
	}
	p, err := u.discover(ctx)
	if err != nil {
		return upstreamTokens{}, err
	}
	// An expired token makes the source refresh now.
	src := u.config(p).TokenSource(oidc.ClientContext(ctx, u.client), &oauth2.Token{RefreshToken: old.RefreshToken, Expiry: time.Unix(1, 0)})
	tok, err := src.Token()
	if err != nil {
		return upstreamTokens{}, fmt.Errorf("%w: the refresh: %w", errUpstream, redactOAuth(err))
	}
	_, fresh, err := u.tokens(ctx, p, tok, "", old.IDToken)
	return fresh, err
}

// tokens checks the ID token of a token response and returns what is
// kept. A refresh answered without an ID token keeps the previous one.
//
// The ID token comes straight from the provider's token endpoint, so its
// issuer, audience (musterd's client), expiry and nonce are checked; its
// signature is checked against the provider's keys unless the token
// endpoint was reached over TLS, which then stands for the signature
// (OpenID Connect Core §3.1.3.7, 6): some providers sign such tokens
// with "none".
func (u *upstream) tokens(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce, previousID string) (string, upstreamTokens, error) {
	out := upstreamTokens{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		if previousID == "" {
			return "", upstreamTokens{}, fmt.Errorf("%w: the token response has no ID token (scope openid)", errUpstream)
		}
		raw = previousID
	}
	tls := strings.HasPrefix(p.Endpoint().TokenURL, "https://")
	verifier := p.VerifierContext(oidc.ClientContext(ctx, u.client), &oidc.Config{
		ClientID: u.opts.ClientID, Now: u.now, InsecureSkipSignatureCheck: tls,
		// A kept ID token may have expired: the refresh is what renews it.
		SkipExpiryCheck: raw == previousID,
	})
	id, err := verifier.Verify(ctx, raw)
	if err != nil {
		return "", upstreamTokens{}, fmt.Errorf("%w: its ID token: %w", errUpstream, err)
	}
	if nonce != "" && id.Nonce != nonce {
		return "", upstreamTokens{}, fmt.Errorf("%w: its ID token carries another login's nonce", errUpstream)
	}
	if id.Subject == "" {
		return "", upstreamTokens{}, fmt.Errorf("%w: its ID token has no subject", errUpstream)
	}
	out.IDToken, out.IDExpiry = raw, id.Expiry
	return id.Subject, out, nil
}

// stale says whether a login's upstream tokens need renewing: its ID
// token (forwarded to servers) or its access token expire within
// upstreamEarly.
func (t upstreamTokens) stale(now time.Time) bool {
	soon := now.Add(upstreamEarly)
	return (!t.IDExpiry.IsZero() && t.IDExpiry.Before(soon)) || (!t.Expiry.IsZero() && t.Expiry.Before(soon))
}

// redactOAuth keeps an OAuth error's code and description, and drops the
// rest (a response body may echo what was sent).
func redactOAuth(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("%s: %s", re.ErrorCode, re.ErrorDescription)
		}
		status := ""
		if re.Response != nil {
			status = re.Response.Status
		}
		return fmt.Errorf("the provider answered %s", status)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
