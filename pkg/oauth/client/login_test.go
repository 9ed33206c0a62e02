package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/oauth/client"
)

// The whole login, as a user does it through musterd: Begin, the start
// URL (302 to Dex), Dex's login form, the callback; then the token Dex
// issued opens the protected server, for that user only.
func TestLoginThroughTheProxyGivesATokenTheProtectedServerAccepts(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.resource.challenge(t, "jira")

	startURL, err := r.c.Begin(t.Context(), "user:alice", s)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if !strings.HasPrefix(startURL, r.musterd.URL+client.StartPath+"?state=") {
		t.Fatalf("Begin returned %s, want musterd's start URL", startURL)
	}
	authURL := r.start(t, startURL)
	q := authURL.Query()
	if got := authURL.Scheme + "://" + authURL.Host + authURL.Path; got != r.dex.Issuer+"/auth" {
		t.Errorf("start redirects to %s, want Dex's authorization endpoint", got)
	}
	for k, want := range map[string]string{
		"client_id":             dextest.ClientMusterd,
		"redirect_uri":          r.musterd.URL + client.DefaultCallbackPath,
		"response_type":         "code",
		"code_challenge_method": "S256",
		"resource":              s.URL,
	} {
		if q.Get(k) != want {
			t.Errorf("authorization URL %s = %q, want %q", k, q.Get(k), want)
		}
	}
	if q.Get("code_challenge") == "" || q.Get("state") == "" || strings.Contains(startURL, q.Get("code_challenge")) {
		t.Errorf("authorization URL lacks a PKCE challenge or a state, or the start URL shows the challenge: %s", authURL)
	}
	// The challenge's scope, and offline_access because Dex lists it.
	if got := strings.Fields(q.Get("scope")); !slices.Equal(got, []string{"openid", "email", "offline_access"}) {
		t.Errorf("scope %q, want the challenge's and offline_access", got)
	}

	callback := r.dex.BrowserRedirect(t, authURL.String(), "alice")
	status, page := get(t, callback.String())
	if status != http.StatusOK || !strings.Contains(page, "Authentication Successful") || !strings.Contains(page, "jira") {
		t.Fatalf("callback: %d %s", status, page)
	}
	select {
	case l := <-r.logins:
		if l != (client.Login{Owner: "user:alice", Issuer: r.dex.Issuer, Server: "jira"}) {
			t.Errorf("OnLogin got %+v", l)
		}
	default:
		t.Fatal("OnLogin was not called")
	}
	if r.loginsAnswered.Load() != 1 {
		t.Error("the callback answered before OnLogin returned: the user's next call may find no tools")
	}

	if form := r.lastCode.Load(); form == nil || form.Get("resource") != s.URL || form.Get("code_verifier") == "" {
		t.Error("the code exchange did not send the resource (RFC 8707) and the PKCE verifier")
	}
	if code, body := r.resource.call(t, r.token(t, "user:alice")); code != http.StatusOK || body != "alice@example.com" {
		t.Errorf("the protected server answered alice's token with %d %q", code, body)
	}
	if _, ok := r.c.TokenSource("user:bob", r.dex.Issuer); ok {
		t.Error("bob has a token source for alice's issuer")
	}
	if _, ok := r.c.TokenSource("user:alice", "https://other.example.com"); ok {
		t.Error("alice's token serves another issuer")
	}

	// Forget is a logout: the token is gone, a source held meanwhile
	// answers that a login is required.
	ts, _ := r.c.TokenSource("user:alice", r.dex.Issuer)
	r.c.Forget("user:alice", r.dex.Issuer)
	if _, err := ts.Token(); !errors.Is(err, client.ErrLoginRequired) {
		t.Errorf("token after Forget: %v, want ErrLoginRequired", err)
	}
}

// A callback is refused, and stores nothing, when its state is unknown,
// used already or expired, or when it claims to come from another
// issuer (RFC 9207); a refused state is burnt.
func TestTheCallbackRefusesBadStatesAndAnotherIssuer(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.resource.challenge(t, "jira")
	refused := func(u, owner, want string) {
		t.Helper()
		status, page := get(t, u)
		if status != http.StatusBadRequest || !strings.Contains(page, want) {
			t.Errorf("GET %s: %d %q, want 400 with %q", u, status, page, want)
		}
		if _, ok := r.stored(t, owner); ok {
			t.Errorf("%s has a token after a refused callback", owner)
		}
		if _, ok := r.c.TokenSource(owner, r.dex.Issuer); ok {
			t.Errorf("%s has a token source after a refused callback", owner)
		}
	}
	callbackURL := r.musterd.URL + client.DefaultCallbackPath

	refused(callbackURL+"?code=abc&state=never-issued", "user:alice", "Authentication session expired")
	refused(callbackURL+"?state=x", "user:alice", "missing required parameters")

	// Another issuer: refused, and the state is used up.
	cb := r.login(t, "user:carol", "alice", s)
	q := cb.Query()
	q.Set("iss", "https://evil.example.com")
	tampered := *cb
	tampered.RawQuery = q.Encode()
	refused(tampered.String(), "user:carol", "unexpected issuer")
	refused(cb.String(), "user:carol", "Authentication session expired")

	// The provider's refusal ends the login: its state cannot be used
	// again.
	cb = r.login(t, "user:frank", "bob", s)
	refused(callbackURL+"?error=access_denied&state="+url.QueryEscape(cb.Query().Get("state")), "user:frank", "denied or failed")
	refused(cb.String(), "user:frank", "Authentication session expired")

	// The login's own issuer in iss is fine.
	cb = r.login(t, "user:dave", "bob", s)
	q = cb.Query()
	q.Set("iss", r.dex.Issuer)
	cb.RawQuery = q.Encode()
	if status, page := get(t, cb.String()); status != http.StatusOK {
		t.Fatalf("callback with the right iss: %d %s", status, page)
	}
	// Used once: a replay is refused and keeps dave's token as it was.
	before, _ := r.stored(t, "user:dave")
	if status, _ := get(t, cb.String()); status != http.StatusBadRequest {
		t.Errorf("a replayed callback answered %d, want 400", status)
	}
	if after, _ := r.stored(t, "user:dave"); after.AccessToken != before.AccessToken {
		t.Error("a replayed callback changed the stored token")
	}

	// Expired: the login took longer than ten minutes.
	cb = r.login(t, "user:erin", "alice", s)
	r.skew.Store(int64(10*time.Minute + time.Second))
	refused(cb.String(), "user:erin", "Authentication session expired")
	r.skew.Store(0)

	// The start URL of an unknown state leads nowhere.
	if status, _ := get(t, r.musterd.URL+client.StartPath+"?state=never-issued"); status != http.StatusBadRequest {
		t.Errorf("start with an unknown state answered %d, want 400", status)
	}
}

// With Dex's short-lived tokens, the source refreshes without a new
// login, stores the rotated refresh token, and the refreshed token opens
// the server; Invalidate forces a refresh of a token not yet expired.
func TestTheTokenSourceRefreshesWithDexAndStoresTheRotatedRefreshToken(t *testing.T) {
	r := newRig(t, rigOptions{idTokenExpiry: time.Minute})
	s := r.resource.challenge(t, "jira")
	if status, page := get(t, r.login(t, "user:alice", "alice", s).String()); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, page)
	}
	first, _ := r.stored(t, "user:alice")
	if first.RefreshToken == "" || first.Expiry.IsZero() || time.Until(first.Expiry) > time.Minute+5*time.Second {
		t.Fatalf("Dex's token: refresh token set %v, expiry in %v: want a refresh token and Dex's one minute",
			first.RefreshToken != "", time.Until(first.Expiry))
	}
	ts, _ := r.c.TokenSource("user:alice", r.dex.Issuer)
	if tok, err := ts.Token(); err != nil || tok.AccessToken != first.AccessToken.Reveal() {
		t.Fatalf("a fresh token: %v; want it as stored, without a refresh", err)
	}

	// Past Dex's expiry by musterd's clock: the same source refreshes.
	r.skew.Store(int64(time.Minute))
	tok, err := ts.Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	second, _ := r.stored(t, "user:alice")
	if second.RefreshToken == first.RefreshToken || second.AccessToken.Reveal() != tok.AccessToken {
		t.Error("the refresh did not store the new token with Dex's rotated refresh token")
	}
	if code, body := r.resource.call(t, tok.AccessToken); code != http.StatusOK || body != "alice@example.com" {
		t.Errorf("the refreshed token: %d %q", code, body)
	}

	// A server refused the token: the next use refreshes, though it is
	// not due by the clock; many callers at once get one refresh (a
	// provider that rotates refresh tokens would refuse a second with the
	// same one).
	r.skew.Store(0)
	r.c.Invalidate("user:alice", r.dex.Issuer)
	posts := r.tokenPosts.Load()
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			if tok, err := ts.Token(); err == nil {
				got[i] = tok.AccessToken
			}
		})
	}
	wg.Wait()
	if n := r.tokenPosts.Load() - posts; n != 1 {
		t.Errorf("%d refreshes for 8 callers at once after Invalidate, want 1", n)
	}
	for _, tok := range got {
		if tok == "" || tok != got[0] {
			t.Fatalf("the callers got different tokens or none")
		}
	}
	third, _ := r.stored(t, "user:alice")
	if third.RefreshToken == second.RefreshToken {
		t.Error("Invalidate did not make the next use refresh")
	}
	if code, _ := r.resource.call(t, got[0]); code != http.StatusOK {
		t.Errorf("the token refreshed after Invalidate: %d", code)
	}

	// A server's 401, told to the source: a token other than the stored one
	// (refused late, after another request's refresh) changes nothing; the
	// stored one is refreshed once, by the next use.
	refusable, ok := ts.(interface{ Refused(string) })
	if !ok {
		t.Fatalf("the token source %T cannot be told of a refusal", ts)
	}
	posts = r.tokenPosts.Load()
	refusable.Refused(tok.AccessToken) // second's, rotated away by Invalidate's refresh
	if now, err := ts.Token(); err != nil || now.AccessToken != got[0] {
		t.Errorf("a stale refusal changed the token: %v", err)
	}
	refusable.Refused(got[0])
	refreshed, err := ts.Token()
	if err != nil || refreshed.AccessToken == got[0] {
		t.Fatalf("the refused token was not refreshed: %v", err)
	}
	if n := r.tokenPosts.Load() - posts; n != 1 {
		t.Errorf("%d refreshes for a stale and a current refusal, want 1", n)
	}
	third, _ = r.stored(t, "user:alice")

	// A refresh Dex refuses (the first refresh token, long rotated away)
	// forgets the token: the user must log in again.
	stale := third
	stale.RefreshToken = first.RefreshToken
	stale.AccessToken = ""
	if err := r.store.PutToken(t.Context(), "user:alice", r.dex.Issuer, stale); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Token(); !errors.Is(err, client.ErrLoginRequired) {
		t.Errorf("a refused refresh: %v, want ErrLoginRequired", err)
	}
	if _, ok := r.stored(t, "user:alice"); ok {
		t.Error("a refused refresh kept the token")
	}
}

// Nothing secret of a login reaches the log: not the code, the PKCE
// verifier, nor any token Dex issued, through a login, a refresh and a
// refused callback.
func TestNoTokenOrCodeReachesTheLog(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.resource.challenge(t, "jira")
	startURL, err := r.c.Begin(t.Context(), "user:alice", s)
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.TrimPrefix(startURL, r.musterd.URL+client.StartPath+"?state=")
	st, ok, err := r.store.State(t.Context(), nonce, time.Now())
	if !ok || err != nil {
		t.Fatalf("the login's state: %v %v", ok, err)
	}
	cb := r.dex.BrowserRedirect(t, r.start(t, startURL).String(), "alice")
	code := cb.Query().Get("code")
	if status, _ := get(t, cb.String()); status != http.StatusOK {
		t.Fatalf("callback: %d", status)
	}
	get(t, cb.String()) // a replay, refused and logged
	first, _ := r.stored(t, "user:alice")
	r.c.Invalidate("user:alice", r.dex.Issuer)
	r.token(t, "user:alice")
	second, _ := r.stored(t, "user:alice")
	// Printing the stored values shows no secret either.
	r.c.Forget("user:nobody", r.dex.Issuer)
	printed := fmt.Sprintf("%v %+v %#v %s %v %#v", first, second, st, st, first.AccessToken, second.RefreshToken)

	logs := r.logs.String()
	if !strings.Contains(logs, "oauth login finished") || !strings.Contains(logs, "oauth token refreshed") || !strings.Contains(logs, "oauth login refused") {
		t.Fatalf("the log lacks the login, the refresh or the refusal:\n%s", logs)
	}
	secrets := map[string]string{
		"code": code, "verifier": st.Verifier.Reveal(), "state": nonce,
		"access token": first.AccessToken.Reveal(), "refresh token": first.RefreshToken.Reveal(),
		"refreshed access token": second.AccessToken.Reveal(), "rotated refresh token": second.RefreshToken.Reveal(),
	}
	for what, secret := range secrets {
		if len(secret) < 8 {
			t.Fatalf("the %s %q is too short to look for", what, secret)
		}
		if strings.Contains(logs, secret) {
			t.Errorf("the %s is in the log", what)
		}
		if what != "code" && what != "state" && strings.Contains(printed, secret) {
			t.Errorf("the %s prints: %s", what, printed)
		}
	}
}
