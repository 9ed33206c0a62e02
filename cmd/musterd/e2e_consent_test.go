package main

import (
	"encoding/json"
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
)

// A client anyone may register at musterd, whose redirect URI is a site,
// does not get a user's login by one link: the real musterd answers
// /oauth/authorize with its consent page (served on musterd's own mux),
// and only the user's Approve, from the browser that opened the link,
// sends them on to Dex; the login then completes to the client.
func TestE2EAStrangersClientWaitsForTheUsersConsent(t *testing.T) {
	r := startAuthServerRig(t)
	const evil = "https://evil.example/cb"
	resp, err := http.Post(r.base+"/oauth/register", "application/json",
		strings.NewReader(`{"client_name":"Evil","redirect_uris":["`+evil+`"],"token_endpoint_auth_method":"none"}`))
	require.NoError(t, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reg))
	resp.Body.Close()
	require.NotEmpty(t, reg.ClientID)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	open := func(method, u string, form url.Values) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, u, body)
		require.NoError(t, err)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := browser.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		page, _ := io.ReadAll(resp.Body)
		return resp, string(page)
	}

	verifier := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {evil}, "scope": {"openid"},
		"state": {"st"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	first, _ := open(http.MethodGet, r.base+"/oauth/authorize?"+q.Encode(), nil)
	require.Equal(t, http.StatusFound, first.StatusCode)
	consent := first.Header.Get("Location")
	require.True(t, strings.HasPrefix(consent, r.base+"/oauth/authorize/consent?"), "asked first, not sent to %s", consent)
	page, body := open(http.MethodGet, consent, nil)
	require.Equal(t, http.StatusOK, page.StatusCode, body)
	assert.Contains(t, body, "<strong>evil.example</strong>")
	assert.Equal(t, "DENY", page.Header.Get("X-Frame-Options"))
	form := url.Values{"decision": {"approve"}}
	for _, m := range regexp.MustCompile(`name="(request|token)" value="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		form.Set(m[1], m[2])
	}
	approved, body := open(http.MethodPost, r.base+"/oauth/authorize/consent", form)
	require.Equal(t, http.StatusSeeOther, approved.StatusCode, body)
	to := approved.Header.Get("Location")
	require.True(t, strings.HasPrefix(to, r.dex.Endpoint().AuthURL+"?"), to)
	back, err := r.callback(r.dex.BrowserRedirect(t, to, "alice"))
	require.NoError(t, err)
	assert.Equal(t, evil, back.Scheme+"://"+back.Host+back.Path)
	assert.NotEmpty(t, back.Query().Get("code"))
	again, _ := open(http.MethodPost, r.base+"/oauth/authorize/consent", form)
	assert.Equal(t, http.StatusBadRequest, again.StatusCode, "an answer counts once")
}
