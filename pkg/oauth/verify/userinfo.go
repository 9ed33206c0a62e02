package verify

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/pkg/identity"
)

// Opaque tokens: a provider may hand out access tokens that are no JWT
// (muster's harness's provider does, as many do). Nothing in such a token
// can be checked locally, so the provider is asked: its userinfo endpoint
// (from its discovery document) answers for a token it issued and refuses
// any other, as muster's dex provider does it. Answers are reused for a
// short while, keyed by a digest of the token, so that a client's every
// request is not a round trip to the provider.

// Defaults of the userinfo check.
const (
	defaultUserInfoTimeout   = 10 * time.Second
	defaultUserInfoCacheTTL  = 60 * time.Second
	defaultUserInfoCacheSize = 1024
)

// errProviderUnavailable marks a refusal because the provider could not
// be asked, rather than because it said no.
var errProviderUnavailable = errors.New("the provider cannot be reached")

// userInfoCache keeps the identities userinfo vouched for, by token
// digest, each until its deadline; at most max of them.
type userInfoCache struct {
	mu      sync.Mutex
	max     int
	entries map[[sha256.Size]byte]userInfoEntry
}

type userInfoEntry struct {
	who   identity.Identity
	until time.Time
}

func newUserInfoCache(max int) *userInfoCache {
	return &userInfoCache{max: max, entries: map[[sha256.Size]byte]userInfoEntry{}}
}

func (c *userInfoCache) get(key [sha256.Size]byte, now time.Time) (identity.Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return identity.Identity{}, false
	}
	if !now.Before(e.until) {
		delete(c.entries, key)
		return identity.Identity{}, false
	}
	return e.who, true
}

// put keeps who until until. When the cache is full, the entries past
// their deadline go first, then the one due soonest.
func (c *userInfoCache) put(key [sha256.Size]byte, who identity.Identity, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		for len(c.entries) >= c.max {
			var soonest [sha256.Size]byte
			first := true
			for k, e := range c.entries {
				if first || e.until.Before(c.entries[soonest].until) {
					soonest, first = k, false
				}
			}
			delete(c.entries, soonest)
		}
	}
	c.entries[key] = userInfoEntry{who: who, until: until}
}

func (c *userInfoCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// viaUserInfo asks the userinfo issuer's provider whom raw, a token that
// is no JWT, names.
func (v *Verifier) viaUserInfo(ctx context.Context, raw string) (identity.Identity, error) {
	is := v.userInfo
	key := sha256.Sum256([]byte(raw))
	if who, ok := v.cache.get(key, v.opts.Now()); ok {
		return who, nil
	}
	ctx, cancel := context.WithTimeout(ctx, v.opts.UserInfoTimeout)
	defer cancel()
	provider, err := v.providerOf(ctx, is)
	if err != nil {
		v.opts.Log.Warn("verify: an opaque token is refused: the provider's discovery document cannot be read",
			"issuer", is.URL, "error", err)
		return identity.Identity{}, refuse("%v: the discovery document of %s cannot be read", errProviderUnavailable, is.URL)
	}
	if provider.UserInfoEndpoint() == "" {
		return identity.Identity{}, refuse("%s has no userinfo endpoint to check a token that is no JWT", is.URL)
	}
	// The status of the answer, which go-oidc gives only as text: a
	// refusal (401, 403) is the token's fault, anything else the
	// provider's.
	status := &statusOf{next: v.opts.HTTPClient.Transport}
	client := &http.Client{Transport: status, Timeout: v.opts.HTTPClient.Timeout}
	info, err := provider.UserInfo(oidc.ClientContext(ctx, client), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: raw, TokenType: "Bearer"}))
	switch {
	case err == nil:
	case status.code == http.StatusUnauthorized || status.code == http.StatusForbidden:
		return identity.Identity{}, refuse("refused by the userinfo endpoint of %s (%d)", is.URL, status.code)
	default:
		var reason string
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			reason = uerr.Err.Error() // the cause, without the request's URL
		} else if status.code == 0 || status.code == http.StatusOK {
			reason = "gave an unusable answer"
		} else {
			reason = fmt.Sprintf("answered %d %s", status.code, http.StatusText(status.code))
		}
		v.opts.Log.Warn("verify: an opaque token is refused: the provider's userinfo endpoint cannot vouch for it",
			"issuer", is.URL, "endpoint", provider.UserInfoEndpoint(), "reason", reason)
		return identity.Identity{}, refuse("%v: the userinfo endpoint of %s %s", errProviderUnavailable, is.URL, reason)
	}
	if info.Subject == "" {
		return identity.Identity{}, refuse("the userinfo endpoint of %s names no subject", is.URL)
	}
	who := identity.Identity{Subject: info.Subject, Issuer: is.URL}

	// Kept for at most the cache's TTL, and never past the token's expiry
	// when the provider tells it.
	now := v.opts.Now()
	until := now.Add(v.opts.UserInfoCacheTTL)
	var claims struct {
		Expiry *jwt.NumericDate `json:"exp"`
	}
	if info.Claims(&claims) == nil && claims.Expiry != nil {
		exp := claims.Expiry.Time()
		if !now.Before(exp) {
			return identity.Identity{}, refuse("expired")
		}
		if exp.Before(until) {
			until = exp
		}
	}
	v.cache.put(key, who, until, now)
	return who, nil
}

// statusOf records the status of the response it passes on.
type statusOf struct {
	next http.RoundTripper
	code int
}

func (s *statusOf) RoundTrip(r *http.Request) (*http.Response, error) {
	next := s.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if resp != nil {
		s.code = resp.StatusCode
	}
	return resp, err
}
