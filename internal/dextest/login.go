package dextest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/musterd/musterd/internal/logtest"
	"golang.org/x/oauth2"
)

// LoginScopes are the scopes [Dex.PasswordLogin] asks for: an ID token
// with the user's email and groups, and a refresh token.
var LoginScopes = []string{"openid", "email", "profile", "groups", "offline_access"}

// PasswordLogin logs user (a username or email) in to ClientMusterd with
// the password grant and returns Dex's tokens.
func (d *Dex) PasswordLogin(t testing.TB, user string) (idToken, accessToken, refreshToken string) {
	t.Helper()
	tok := d.PasswordToken(t, ClientMusterd, user)
	idToken, _ = tok.Extra("id_token").(string)
	if idToken == "" {
		t.Fatalf("dextest: Dex's token response for %s has no id_token", user)
	}
	return idToken, tok.AccessToken, tok.RefreshToken
}

// PasswordToken logs user (a username or email) in to the client with
// that ID with the password grant, asking for LoginScopes, and returns the
// whole token response; the ID token is its Extra("id_token").
func (d *Dex) PasswordToken(t testing.TB, clientID, user string) *oauth2.Token {
	t.Helper()
	u := d.User(t, user)
	conf := d.OAuth2Config(t, clientID, LoginScopes...)
	tok, err := conf.PasswordCredentialsToken(d.Context(t.Context()), u.Email, u.Password)
	if err != nil {
		t.Fatalf("dextest: password grant for %s at client %s: %v\nDex's log:\n%s", user, clientID, err, logtest.Tail(d.LogFile, 10))
	}
	return tok
}

// BrowserLogin follows authURL, an authorization request to Dex, through
// Dex's login form as user (a username or email), as a browser would, and
// returns the code Dex sends to the client's redirect URI. It checks that
// the state there is the one authURL sent.
func (d *Dex) BrowserLogin(t testing.TB, authURL, user string) (code string) {
	t.Helper()
	redirect := d.BrowserRedirect(t, authURL, user)
	q := redirect.Query()
	if e := q.Get("error"); e != "" {
		t.Fatalf("dextest: Dex redirected to %s with error %q: %s", redirect.Redacted(), e, q.Get("error_description"))
	}
	if code = q.Get("code"); code == "" {
		t.Fatalf("dextest: Dex's redirect to %s has no code", redirect.Redacted())
	}
	if want := stateOf(authURL); q.Get("state") != want {
		t.Fatalf("dextest: Dex's redirect carries state %q, the request sent %q", q.Get("state"), want)
	}
	return code
}

// BrowserRedirect is [Dex.BrowserLogin] up to the redirect to the client:
// it returns the URL Dex redirects the browser to (the client's redirect
// URI with code and state, or with an error) without following it, so that
// a test can follow it into the client itself.
func (d *Dex) BrowserRedirect(t testing.TB, authURL, user string) *url.URL {
	t.Helper()
	u := d.User(t, user)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatalf("dextest: %v", err)
	}
	browser := &http.Client{
		Transport: d.HTTPClient.Transport,
		Timeout:   d.HTTPClient.Timeout,
		Jar:       jar,
		// Redirects within Dex are followed; the one that leaves Dex is
		// the answer.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !d.inDex(req.URL) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return fmt.Errorf("more than 10 redirects")
			}
			return nil
		},
	}

	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatalf("dextest: GET the authorization URL: %v", err)
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if loc := d.leaving(t, resp); loc != nil {
		return loc // Dex answered without a login (an error, or a session)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `name="password"`) {
		t.Fatalf("dextest: expected Dex's login form at %s, got %s:\n%.500s", resp.Request.URL.Redacted(), resp.Status, page)
	}

	// The form posts back to the page it is on.
	form := url.Values{"login": {u.Email}, "password": {u.Password}}
	resp, err = browser.PostForm(resp.Request.URL.String(), form)
	if err != nil {
		t.Fatalf("dextest: POST Dex's login form: %v", err)
	}
	page, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if loc := d.leaving(t, resp); loc != nil {
		return loc
	}
	t.Fatalf("dextest: Dex did not redirect to the client after logging %s in (%s at %s):\n%.500s\nDex's log:\n%s",
		user, resp.Status, resp.Request.URL.Redacted(), page, logtest.Tail(d.LogFile, 10))
	return nil
}

// leaving returns the Location of a redirect out of Dex, or nil.
func (d *Dex) leaving(t testing.TB, resp *http.Response) *url.URL {
	t.Helper()
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("dextest: Dex's redirect: %v", err)
	}
	if d.inDex(loc) {
		return nil
	}
	return loc
}

func (d *Dex) inDex(u *url.URL) bool {
	return strings.HasPrefix(u.String(), d.Issuer+"/")
}

func stateOf(authURL string) string {
	u, err := url.Parse(authURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("state")
}
