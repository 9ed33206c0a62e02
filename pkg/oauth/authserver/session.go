package authserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Session is the login an access token of musterd's belongs to.
type Session struct {
	// Subject is the user, as the provider names them (its sub).
	Subject string
	// Issuer is the provider's issuer: the user is the provider's.
	Issuer string
	// Family is the login: every token issued for it shares it.
	Family string
	// Client is the client the token was issued to.
	Client string
}

var (
	// ErrNotMusterds is a token that is not one of musterd's: another
	// check may know it.
	ErrNotMusterds = errors.New("not an access token of musterd's")
	// ErrInvalidToken is one of musterd's access tokens that is unknown,
	// expired or revoked.
	ErrInvalidToken = errors.New("the access token is unknown, expired or revoked")
)

// IsOwn says whether token is one of musterd's own access tokens by its
// form; Lookup alone says whether it is good.
func IsOwn(token string) bool { return strings.HasPrefix(token, accessPrefix) }

// Lookup returns the login of one of musterd's access tokens: an error
// wrapping ErrNotMusterds for a token of another form, ErrInvalidToken
// for one that is unknown, expired, or whose family was revoked.
func (s *Server) Lookup(ctx context.Context, token string) (Session, error) {
	if !IsOwn(token) {
		return Session{}, ErrNotMusterds
	}
	var at accessRecord
	if err := getJSON(ctx, s.opts.Store, kindAccess+hashed(token), &at); err != nil {
		if errors.Is(err, errNotFound) {
			return Session{}, ErrInvalidToken
		}
		return Session{}, fmt.Errorf("authserver: %w", err)
	}
	if !s.opts.Now().Before(at.Expiry) {
		return Session{}, ErrInvalidToken
	}
	if _, found, err := s.opts.Store.Get(ctx, kindFamily+at.Family); err != nil {
		return Session{}, fmt.Errorf("authserver: %w", err)
	} else if !found {
		return Session{}, ErrInvalidToken
	}
	return Session{Subject: at.Subject, Issuer: s.opts.Upstream.Issuer, Family: at.Family, Client: at.Client}, nil
}

// UpstreamIDToken returns the provider's ID token of a login, renewed at
// the provider first when it is about to expire (and kept so renewed).
func (s *Server) UpstreamIDToken(ctx context.Context, family string) (string, error) {
	var fam familyRecord
	if err := getJSON(ctx, s.opts.Store, kindFamily+family, &fam); err != nil {
		return "", fmt.Errorf("authserver: the login: %w", err)
	}
	if !fam.Upstream.stale(s.opts.Now()) {
		return fam.Upstream.IDToken, nil
	}
	unlock, err := s.lockFamily(ctx, family)
	if err != nil {
		return "", fmt.Errorf("authserver: the login is being renewed: %w", err)
	}
	defer unlock()
	if err := getJSON(ctx, s.opts.Store, kindFamily+family, &fam); err != nil {
		return "", fmt.Errorf("authserver: the login: %w", err)
	}
	if !fam.Upstream.stale(s.opts.Now()) {
		return fam.Upstream.IDToken, nil // renewed meanwhile
	}
	fresh, err := s.upstream.refresh(ctx, fam.Upstream)
	if err != nil {
		return "", err
	}
	// A revocation waits for the lock in this musterd, but another
	// musterd's may have ended the login during the provider's answer.
	var now familyRecord
	if err := getJSON(ctx, s.opts.Store, kindFamily+family, &now); errors.Is(err, errNotFound) {
		return "", ErrInvalidToken
	} else if err != nil {
		return "", fmt.Errorf("authserver: the login: %w", err)
	}
	fam.Refresh = now.Refresh
	fam.Upstream = fresh
	if err := putJSON(ctx, s.opts.Store, kindFamily+family, fam, s.opts.SessionDuration); err != nil {
		return "", fmt.Errorf("authserver: %w", err)
	}
	return fresh.IDToken, nil
}
