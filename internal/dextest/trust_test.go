package dextest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/musterd/musterd/internal/dextest"
)

// exchanged is Dex's answer to a token exchange (RFC 8693 §2.2).
type exchanged struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type"`
	Error           string `json:"error"`
}

// exchange asks dex, as client, for an ID token in return for subject (an
// ID token) through connector.
func exchange(t *testing.T, dex *dextest.Dex, client, connector, subject string) (int, exchanged) {
	t.Helper()
	form := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":        {subject},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:id_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
		"connector_id":         {connector},
		"scope":                {"openid profile email groups"},
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, dex.Issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	c := dex.Client(t, client)
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err := dex.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("token exchange at %s: %v", dex.Issuer, err)
	}
	defer resp.Body.Close()
	var out exchanged
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("token exchange at %s: %v", dex.Issuer, err)
	}
	return resp.StatusCode, out
}

// A second Dex whose OIDC connector trusts the first takes the first's
// ID token in a token exchange and answers with its own, for the same
// user; a token of a Dex it does not trust, or a connector it lacks, is
// refused.
func TestASecondDexExchangesTheFirstsIDTokens(t *testing.T) {
	a := dextest.Start(t, dextest.Options{TLS: true})
	b := dextest.Start(t, dextest.Options{TLS: true, Trusts: []dextest.Trust{{ConnectorID: "cluster-a", Upstream: a}}})
	stranger := dextest.Start(t, dextest.Options{TLS: true})
	ctx := b.Context(t.Context())

	subjects := map[string]bool{}
	for _, user := range []string{"alice", "bob"} {
		idToken, _, _ := a.PasswordLogin(t, user)
		code, out := exchange(t, b, dextest.ClientMusterd, "cluster-a", idToken)
		if code != http.StatusOK || out.AccessToken == "" {
			t.Fatalf("%s: exchange answered %d %q", user, code, out.Error)
		}
		if out.IssuedTokenType != "urn:ietf:params:oauth:token-type:id_token" {
			t.Errorf("%s: issued token type %q", user, out.IssuedTokenType)
		}
		tok, err := verifier(t, ctx, b, dextest.ClientMusterd).Verify(ctx, out.AccessToken)
		if err != nil {
			t.Fatalf("%s: the exchanged token is no ID token of the second Dex's: %v", user, err)
		}
		var c claims
		if err := tok.Claims(&c); err != nil {
			t.Fatal(err)
		}
		if c.Email != user+"@example.com" {
			t.Errorf("%s: the exchanged token's email is %q", user, c.Email)
		}
		subjects[tok.Subject] = true
	}
	if len(subjects) != 2 {
		t.Errorf("alice and bob got subjects %v: want two", subjects)
	}

	foreign, _, _ := stranger.PasswordLogin(t, "alice")
	if code, out := exchange(t, b, dextest.ClientMusterd, "cluster-a", foreign); code == http.StatusOK {
		t.Errorf("a token of an untrusted Dex was exchanged: %d %+v", code, out.Error)
	}
	own, _, _ := a.PasswordLogin(t, "alice")
	if code, _ := exchange(t, b, dextest.ClientMusterd, "no-such-connector", own); code == http.StatusOK {
		t.Error("an exchange through a connector the second Dex lacks succeeded")
	}
}
