package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// A user's token for an issuer serves every server of that issuer. It
// lives in the Store, not in the source: each Token call reads it, and a
// refresh writes the new one (with the provider's rotated refresh token)
// back, so every source of the same (owner, issuer), on this replica or
// another, sees it. Refreshes of one (owner, issuer) take turns here:
// a provider that rotates refresh tokens would refuse the second of two
// racing with the same one.

// ErrLoginRequired is wrapped by a TokenSource's error when the user
// must log in again: the token is gone (Forget) or its refresh was
// refused; the token is then forgotten.
var ErrLoginRequired = errors.New("login required")

// TokenSource returns the source of owner's token for issuer, refreshed
// when it is within EarlyExpiry of its expiry or was Invalidated; ok is
// false when the store holds none.
func (c *Client) TokenSource(owner, issuer string) (oauth2.TokenSource, bool) {
	ctx, cancel := c.storeContext()
	defer cancel()
	if _, ok, err := c.store.Token(ctx, owner, issuer); err != nil || !ok {
		return nil, false
	}
	return &tokenSource{c: c, owner: owner, issuer: issuer}, true
}

// storeContext bounds a store access made where no caller's context is
// at hand (oauth2.TokenSource has none).
func (c *Client) storeContext() (context.Context, context.CancelFunc) {
	timeout := c.http.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return context.WithTimeout(context.Background(), timeout)
}

const defaultTimeout = 30 * time.Second

type tokenSource struct {
	c             *Client
	owner, issuer string
}

func (s *tokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := s.c.storeContext()
	defer cancel()
	return s.c.token(ctx, s.owner, s.issuer)
}

// Refused is told that a server refused accessToken with a 401: when it
// is still the stored one, the next Token call refreshes it.
func (s *tokenSource) Refused(accessToken string) { s.c.invalidate(s.owner, s.issuer, accessToken) }

// token returns owner's valid token for issuer, refreshing it if due.
func (c *Client) token(ctx context.Context, owner, issuer string) (*oauth2.Token, error) {
	t, ok, err := c.store.Token(ctx, owner, issuer)
	if err != nil {
		return nil, fmt.Errorf("token for %s: read the store: %w", issuer, err)
	}
	if !ok {
		return nil, fmt.Errorf("no token for %s: %w", issuer, ErrLoginRequired)
	}
	if c.fresh(t) {
		return t.oauth2(), nil
	}
	mu := c.refreshLock(owner, issuer)
	mu.Lock()
	defer mu.Unlock()
	// Another caller may have refreshed while this one waited.
	if t, ok, err = c.store.Token(ctx, owner, issuer); err != nil {
		return nil, fmt.Errorf("token for %s: read the store: %w", issuer, err)
	} else if !ok {
		return nil, fmt.Errorf("no token for %s: %w", issuer, ErrLoginRequired)
	}
	if c.fresh(t) {
		return t.oauth2(), nil
	}
	if t.RefreshToken == "" {
		_ = c.store.DeleteToken(ctx, owner, issuer)
		c.log.Info("oauth token expired without a refresh token", "issuer", issuer, "owner", ownerLog(owner))
		return nil, fmt.Errorf("the token for %s expired and cannot be refreshed: %w", issuer, ErrLoginRequired)
	}
	meta, err := c.metadata(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("refresh the token for %s: %w", issuer, err)
	}
	reg, err := c.register(ctx, issuer, meta)
	if err != nil {
		return nil, fmt.Errorf("refresh the token for %s: %w", issuer, err)
	}
	if reg.ClientID != t.ClientID {
		_ = c.store.DeleteToken(ctx, owner, issuer)
		return nil, fmt.Errorf("the token for %s was issued to another client: %w", issuer, ErrLoginRequired)
	}
	// Without its access token, x/oauth2's source refreshes whatever the
	// stored expiry says.
	stale := t.oauth2()
	stale.AccessToken = ""
	fresh, err := c.config(meta, reg, t.Scopes).TokenSource(context.WithValue(ctx, oauth2.HTTPClient, c.http), stale).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 && re.Response.StatusCode != http.StatusTooManyRequests {
			_ = c.store.DeleteToken(ctx, owner, issuer)
			c.log.Info("oauth token refresh refused", "issuer", issuer, "owner", ownerLog(owner), "cause", describe(err))
			return nil, fmt.Errorf("the provider %s refused to refresh the token (%s): %w", issuer, describe(err), ErrLoginRequired)
		}
		return nil, fmt.Errorf("refresh the token for %s: %s", issuer, describe(err))
	}
	nt := tokenFrom(fresh, t.Scopes, reg.ClientID)
	if err := c.store.PutToken(ctx, owner, issuer, nt); err != nil {
		return nil, fmt.Errorf("store the refreshed token for %s: %w", issuer, err)
	}
	c.log.Info("oauth token refreshed", "issuer", issuer, "owner", ownerLog(owner), "expiry", nt.Expiry)
	return fresh, nil
}

// fresh reports whether t may be sent as it is: it has an access token
// and is not within EarlyExpiry of its expiry (a token without expiry
// never is).
func (c *Client) fresh(t Token) bool {
	if t.AccessToken == "" {
		return false
	}
	return t.Expiry.IsZero() || c.now().Add(c.opts.EarlyExpiry).Before(t.Expiry)
}

func (c *Client) refreshLock(owner, issuer string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{owner, issuer}
	mu, ok := c.refreshMu[k]
	if !ok {
		mu = &sync.Mutex{}
		c.refreshMu[k] = mu
	}
	return mu
}

// Invalidate marks owner's token for issuer as refused by a server (a
// 401 although it was sent): the next Token call refreshes it, whatever
// its expiry says. The caller retries its request once with that token;
// a second 401 is a login required.
func (c *Client) Invalidate(owner, issuer string) { c.invalidate(owner, issuer, "") }

// invalidate is Invalidate of the stored token when its access token is
// refused, or of any when refused is "".
func (c *Client) invalidate(owner, issuer, refused string) {
	mu := c.refreshLock(owner, issuer)
	mu.Lock() // not while a refresh of the same token is under way
	defer mu.Unlock()
	ctx, cancel := c.storeContext()
	defer cancel()
	t, ok, err := c.store.Token(ctx, owner, issuer)
	if err != nil || !ok || t.AccessToken == "" || (refused != "" && t.AccessToken.Reveal() != refused) {
		return
	}
	t.AccessToken = ""
	if err := c.store.PutToken(ctx, owner, issuer, t); err != nil {
		c.log.Warn("oauth token invalidate: write the store", "issuer", issuer, "owner", ownerLog(owner), "error", err.Error())
	}
}

// Forget drops owner's token for issuer (a logout): the next login asks
// the provider again.
func (c *Client) Forget(owner, issuer string) {
	ctx, cancel := c.storeContext()
	defer cancel()
	if err := c.store.DeleteToken(ctx, owner, issuer); err != nil {
		c.log.Warn("oauth token forget: write the store", "issuer", issuer, "owner", ownerLog(owner), "error", err.Error())
	}
}
