package authserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// A login is the provider's to end: a user whose session the provider
// revoked (a logout there, an administrator's revocation) is no longer let
// in with musterd's tokens of that login. So each request with one of them
// asks the provider's userinfo endpoint, with the login's upstream access
// token, whether it still stands, as muster checks its provider on every
// request. Its answer "no" (401 or 403) ends the login, every token of its
// family with it. A provider that cannot be reached, or answers anything
// else, ends nothing: that is no revocation, and the login stands, said in
// the log. Nor does one slower than standsTimeout: the question costs a
// request at most that long. The answer is not kept, so that the
// provider's revocation holds at the very next request.

// standsTimeout bounds the provider's answer to whether a login stands.
const standsTimeout = 5 * time.Second

// errUpstreamRevoked is Stands' error for a login its provider ended.
var errUpstreamRevoked = errors.New("the identity provider no longer takes the login (revoked or ended there)")

// stands asks the provider whether the login family still stands; an
// error wrapping errUpstreamRevoked is a "no", any other error is none.
func (s *Server) stands(ctx context.Context, family string) error {
	ctx, cancel := context.WithTimeout(ctx, standsTimeout)
	defer cancel()
	var fam familyRecord
	if err := getJSON(ctx, s.opts.Store, kindFamily+family, &fam); err != nil {
		return fmt.Errorf("authserver: the login: %w", err)
	}
	if fam.Upstream.AccessToken == "" {
		return nil // nothing to ask with
	}
	if fam.Upstream.stale(s.opts.Now()) {
		if _, err := s.UpstreamIDToken(ctx, family); err != nil {
			if isRefusal(err) {
				return fmt.Errorf("%w: %v", errUpstreamRevoked, err)
			}
			return err
		}
		if err := getJSON(ctx, s.opts.Store, kindFamily+family, &fam); err != nil {
			return fmt.Errorf("authserver: the login: %w", err)
		}
	}
	p, err := s.upstream.discover(ctx)
	if err != nil {
		return err
	}
	_, err = p.UserInfo(oidc.ClientContext(ctx, s.upstream.client), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: fam.Upstream.AccessToken, TokenType: "Bearer"}))
	if err == nil {
		return nil
	}
	if isRefusal(err) {
		return errUpstreamRevoked
	}
	return fmt.Errorf("the identity provider's userinfo: %w", redactOAuth(err))
}

// isRefusal says whether err is the provider's refusal of a login's
// token: a 401 or 403 from userinfo (go-oidc's error begins with the
// status), or invalid_grant from its token endpoint at a refresh.
func isRefusal(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "401 ") || strings.HasPrefix(msg, "403 ") || strings.Contains(msg, "invalid_grant")
}
