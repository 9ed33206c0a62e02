package authserver

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
)

// evilRedirect is an attacker's redirect URI: a site, not the user's
// device.
const evilRedirect = "https://evil.example/cb"

// newBrowser is a browser with cookies that does not follow redirects.
func newBrowser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// authorizeLink is an authorization request of client with redirect,
// state and the challenge of verifier: the link an attacker sends.
func (r *rig) authorizeLink(client, redirect, state, verifier string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "scope": {"openid email"},
		"state": {state}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	return r.base + PathAuthorize + "?" + q.Encode()
}

// answer is a response's status, headers and body.
type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(body)}
}

func get(t *testing.T, c *http.Client, u string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	return do(t, c, req)
}

// decide posts a consent's form; cookie, when set, is sent by hand.
func decide(t *testing.T, c *http.Client, base string, form url.Values, cookie *http.Cookie) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+PathConsent, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	return do(t, c, req)
}

var formField = regexp.MustCompile(`name="(request|token)" value="([^"]*)"`)

// consentPage opens link in browser and returns the consent page it leads
// to, with its form's fields.
func (r *rig) consentPage(t *testing.T, browser *http.Client, link string) (answer, url.Values) {
	t.Helper()
	first := get(t, browser, link)
	require.Equal(t, http.StatusFound, first.status, first.body)
	loc := first.header.Get("Location")
	require.True(t, strings.HasPrefix(loc, r.base+PathConsent+"?"), "the user is asked first, not sent to %s", loc)
	page := get(t, browser, loc)
	require.Equal(t, http.StatusOK, page.status, page.body)
	form := url.Values{}
	for _, m := range formField.FindAllStringSubmatch(page.body, -1) {
		form.Set(m[1], m[2])
	}
	require.NotEmpty(t, form.Get("request"))
	require.NotEmpty(t, form.Get("token"))
	return page, form
}

// A client anyone could register, with a redirect URI that is a site,
// cannot take a user's login with one link: /oauth/authorize asks the
// user first, on a page naming the client and the site, bound to the
// browser by a cookie and good once. Approve goes on to the provider and
// the login completes; Deny sends the client access_denied.
func TestAStrangersClientNeedsTheUsersConsent(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true}, nil)
	status, out := r.register(t, `{"client_name":"<script>alert(1)</script> Evil & Co","redirect_uris":["`+evilRedirect+`"],"token_endpoint_auth_method":"none"}`, nil)
	require.Equal(t, http.StatusCreated, status, out)
	evil := str(out, "client_id")
	dexAuth := r.dex.Endpoint().AuthURL

	victim := newBrowser(t)
	verifier := oauth2.GenerateVerifier() // the attacker's
	link := r.authorizeLink(evil, evilRedirect, "evil-state", verifier)
	first := get(t, victim, link)
	require.Equal(t, http.StatusFound, first.status)
	require.False(t, strings.HasPrefix(first.header.Get("Location"), dexAuth), "the link alone must not reach the provider")
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: first.header}).Cookies() {
		if strings.HasPrefix(c.Name, consentCookie) {
			cookie = c
		}
	}
	require.NotNil(t, cookie, "the answer binds the page to the browser")
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteLaxMode, cookie.SameSite)
	assert.Equal(t, "/oauth", cookie.Path)
	assert.False(t, cookie.Secure, "an http (loopback) issuer")

	page, form := r.consentPage(t, victim, link)
	csp := page.header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "form-action 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Contains(t, csp, "https://evil.example", "the redirect after the form is allowed (Chrome checks it)")
	assert.Equal(t, "DENY", page.header.Get("X-Frame-Options"))
	assert.Equal(t, "no-store", page.header.Get("Cache-Control"))
	assert.Contains(t, page.body, "&lt;script&gt;alert(1)&lt;/script&gt; Evil &amp; Co", "the client's name, escaped")
	assert.NotContains(t, page.body, "<script>")
	assert.Contains(t, page.body, evil, "the client ID")
	assert.Contains(t, page.body, "<strong>evil.example</strong>", "where the login goes")

	// Another browser (the attacker's) cannot see or answer the page.
	assert.Equal(t, http.StatusBadRequest, get(t, newBrowser(t), r.base+PathConsent+"?request="+form.Get("request")).status)
	approve := url.Values{"request": {form.Get("request")}, "token": {form.Get("token")}, "decision": {"approve"}}
	refused := decide(t, noRedirects, r.base, approve, nil)
	assert.Equal(t, http.StatusBadRequest, refused.status, "no cookie")
	assert.Contains(t, refused.body, "does not belong to a sign-in request of this browser")
	assert.Equal(t, "DENY", refused.header.Get("X-Frame-Options"))
	wrong := url.Values{"request": {form.Get("request")}, "token": {"not-the-token"}, "decision": {"approve"}}
	assert.Equal(t, http.StatusBadRequest, decide(t, victim, r.base, wrong, nil).status, "a wrong token")
	assert.Equal(t, http.StatusBadRequest, decide(t, noRedirects, r.base,
		url.Values{"request": {"unknown"}, "token": {"x"}, "decision": {"approve"}}, &http.Cookie{Name: consentCookie + "unknown", Value: "x"}).status,
		"an unknown request")
	assert.Equal(t, http.StatusBadRequest, decide(t, victim, r.base,
		url.Values{"request": {form.Get("request")}, "token": {form.Get("token")}, "decision": {"maybe"}}, nil).status)

	// The user approves: on to the provider, and the login completes.
	approved := decide(t, victim, r.base, approve, nil)
	require.Equal(t, http.StatusSeeOther, approved.status, approved.body)
	to := approved.header.Get("Location")
	require.True(t, strings.HasPrefix(to, dexAuth+"?"), to)
	replay := decide(t, victim, r.base, approve, &http.Cookie{Name: consentCookie + form.Get("request"), Value: form.Get("token")})
	assert.Equal(t, http.StatusBadRequest, replay.status, "an answer counts once")
	assert.Contains(t, replay.body, "already answered")
	upstream := r.dex.BrowserRedirect(t, to, "alice")
	back := r.follow(t, upstream.String())
	assert.Equal(t, evilRedirect, back.Scheme+"://"+back.Host+back.Path)
	assert.Equal(t, "evil-state", back.Query().Get("state"))
	status, out = r.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
		"client_id": {evil}, "redirect_uri": {evilRedirect}, "code_verifier": {verifier}})
	require.Equal(t, http.StatusOK, status, out)

	// The user denies: the client hears access_denied, with its state
	// and musterd's iss, and the request is gone.
	_, form = r.consentPage(t, victim, r.authorizeLink(evil, evilRedirect, "second", oauth2.GenerateVerifier()))
	deny := url.Values{"request": {form.Get("request")}, "token": {form.Get("token")}, "decision": {"deny"}}
	denied := decide(t, victim, r.base, deny, nil)
	require.Equal(t, http.StatusSeeOther, denied.status, denied.body)
	loc, err := url.Parse(denied.header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, evilRedirect, loc.Scheme+"://"+loc.Host+loc.Path)
	assert.Equal(t, "access_denied", loc.Query().Get("error"))
	assert.Equal(t, "second", loc.Query().Get("state"))
	assert.Equal(t, r.base, loc.Query().Get("iss"))
	deny.Set("decision", "approve")
	assert.Equal(t, http.StatusBadRequest,
		decide(t, victim, r.base, deny, &http.Cookie{Name: consentCookie + form.Get("request"), Value: form.Get("token")}).status,
		"a denied request cannot be approved after")
	_, err = r.as.storage.request(t.Context(), form.Get("request"))
	assert.Error(t, err, "a denied request is forgotten")

	// prompt=none allows no page: the client is told interaction_required.
	silent := get(t, victim, r.authorizeLink(evil, evilRedirect, "silent", oauth2.GenerateVerifier())+"&prompt=none")
	require.Equal(t, http.StatusFound, silent.status)
	loc, err = url.Parse(silent.header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, evilRedirect, loc.Scheme+"://"+loc.Host+loc.Path)
	assert.Equal(t, "interaction_required", loc.Query().Get("error"))
	assert.Equal(t, "silent", loc.Query().Get("state"))
	assert.Equal(t, r.base, loc.Query().Get("iss"))
}

// Who is asked: the user of a metadata document's client or of a
// publicly registered one with a site's redirect URI. Not asked: the
// operator's clients (the registration token), and redirect URIs only the
// user's own device receives (loopback, a private-use scheme).
func TestWhoIsAskedForConsent(t *testing.T) {
	const token = "reg-t0ken"
	host := cimdHost(t, map[string]func(string) map[string]any{
		"/web.json": func(id string) map[string]any {
			return map[string]any{"client_id": id, "client_name": "web agent", "redirect_uris": []string{"https://agent.example/cb"},
				"token_endpoint_auth_method": "none"}
		},
	})
	tune := trustBoth(host)
	r := startRig(t, dextest.Options{TLS: true}, func(o *Options) {
		tune(o)
		o.EnableCIMD, o.CIMDAllowPrivateAddresses = true, true
		o.RegistrationToken = token
		o.TrustedPublicRegistrationSchemes = []string{"cursor"}
	})
	dexAuth := r.dex.Endpoint().AuthURL
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	register := func(body string, header http.Header) string {
		status, out := r.register(t, body, header)
		require.Equal(t, http.StatusCreated, status, out)
		return str(out, "client_id")
	}
	for _, c := range []struct {
		name, client, redirect string
		asked                  bool
	}{
		{"a metadata document, https", host.URL + "/web.json", "https://agent.example/cb", true},
		{"public registration, https", register(`{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`, nil), "https://app.example/cb", true},
		{"public registration, confidential, https", register(`{"redirect_uris":["https://app.example/cb"]}`, nil), "https://app.example/cb", true},
		{"the registration token, https", register(`{"redirect_uris":["https://ops.example/cb"]}`, bearer), "https://ops.example/cb", false},
		{"loopback", r.publicClient(t), clientRedirect, false},
		{"a private-use scheme", register(`{"redirect_uris":["`+cursorRedirect+`"],"token_endpoint_auth_method":"none"}`, nil), cursorRedirect, false},
	} {
		status, to := r.authorizeTo(t, c.client, c.redirect)
		require.Equal(t, http.StatusFound, status, c.name)
		if c.asked {
			assert.True(t, strings.HasPrefix(to, r.base+PathConsent+"?"), "%s: asked, not sent to %s", c.name, to)
		} else {
			assert.True(t, strings.HasPrefix(to, dexAuth+"?"), "%s: straight to the provider, not %s", c.name, to)
		}
	}
}

// The consent cookie is Secure under an https issuer, and its path is the
// issuer's /oauth.
func TestTheConsentCookieUnderAnHTTPSIssuer(t *testing.T) {
	for issuer, path := range map[string]string{"https://musterd.example": "/oauth", "https://gw.example/musterd/": "/musterd/oauth"} {
		s, err := New(Options{Issuer: issuer, Upstream: Upstream{Issuer: "https://dex.example", ClientID: "musterd"}})
		require.NoError(t, err)
		c := s.consentCookie("req", "tok", 600)
		assert.True(t, c.Secure, issuer)
		assert.True(t, c.HttpOnly, issuer)
		assert.Equal(t, http.SameSiteLaxMode, c.SameSite, issuer)
		assert.Equal(t, path, c.Path, issuer)
	}
}
