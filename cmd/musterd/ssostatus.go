package main

import (
	"context"
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// How a user's single sign-on went, per server (coretools.SSOStatus):
// auth://status shows an attempt under way as sso_pending and a failed
// one as sso_attempt_failed with why; core_auth_login waits for one under
// way, so that a user who asks just after their session started finds
// the server connected, as muster connects it before the session's first
// answer.

// ssoAwaitLimit bounds core_auth_login's wait for an SSO attempt.
const ssoAwaitLimit = 30 * time.Second

// ssoFailures are the SSO attempts that failed, per user and server,
// with why, until one succeeds; and who waits for an attempt's end. Its
// fields are guarded by sso.mu.
type ssoFailures struct {
	why     map[ssoTarget]string
	waiting map[ssoTarget][]chan struct{}
}

// note records how t's attempt ended, and wakes whoever waits for it.
func (f *ssoFailures) note(t ssoTarget, err error) {
	for _, w := range f.waiting[t] {
		close(w)
	}
	delete(f.waiting, t)
	if err == nil {
		delete(f.why, t)
		return
	}
	if f.why == nil {
		f.why = map[ssoTarget]string{}
	}
	f.why[t] = err.Error()
}

// SSO says whether owner's connection to the SSO server key is being
// opened, and why its last attempt failed ("" when it did not).
func (l *logins) SSO(owner string, key events.Key) (pending bool, failure string) {
	s := l.d.SSO
	t := ssoTarget{owner: owner, key: key}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, pending = s.inflight[t]
	return pending, s.failures.why[t]
}

// AwaitSSO returns once owner's connection to the SSO server key that is
// being opened is open or failed, at once when none is being opened, or
// when ctx ends or ssoAwaitLimit passed.
func (l *logins) AwaitSSO(ctx context.Context, owner string, key events.Key) {
	s := l.d.SSO
	t := ssoTarget{owner: owner, key: key}
	s.mu.Lock()
	if _, pending := s.inflight[t]; !pending {
		s.mu.Unlock()
		return
	}
	if s.failures.waiting == nil {
		s.failures.waiting = map[ssoTarget][]chan struct{}{}
	}
	done := make(chan struct{})
	s.failures.waiting[t] = append(s.failures.waiting[t], done)
	s.mu.Unlock()
	limit := time.NewTimer(ssoAwaitLimit)
	defer limit.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-limit.C:
	}
}

// retryOwner forgets when owner's connections were last tried, so that a
// new token of the owner's gets them tried at once rather than after
// ssoRetry. The caller holds s.mu.
func (s *sso) retryOwner(owner string) {
	for t := range s.tried {
		if t.owner == owner {
			delete(s.tried, t)
		}
	}
}
