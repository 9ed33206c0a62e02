package dextest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
)

// claims are the ID token's claims the tests look at.
type claims struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

func verifier(t *testing.T, ctx context.Context, dex *dextest.Dex, clientID string) *oidc.IDTokenVerifier {
	t.Helper()
	provider, err := oidc.NewProvider(ctx, dex.Issuer)
	if err != nil {
		t.Fatalf("discovery at %s: %v", dex.Issuer, err)
	}
	return provider.Verifier(&oidc.Config{ClientID: clientID})
}

func TestDiscoveryOverTLSWithTheTestsCA(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	if !strings.HasPrefix(dex.Issuer, "https://127.0.0.1:") || dex.CAFile == "" {
		t.Fatalf("issuer %q, CA file %q: want HTTPS on loopback with a CA", dex.Issuer, dex.CAFile)
	}
	ctx := dex.Context(t.Context())
	provider, err := oidc.NewProvider(ctx, dex.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	if got, want := provider.Endpoint().TokenURL, dex.Issuer+"/token"; got != want {
		t.Errorf("token endpoint %q, want %q", got, want)
	}
	var doc struct {
		Methods []string `json:"code_challenge_methods_supported"`
		Grants  []string `json:"grant_types_supported"`
	}
	if err := provider.Claims(&doc); err != nil {
		t.Fatal(err)
	}
	if !contains(doc.Methods, "S256") || !contains(doc.Grants, "password") || !contains(doc.Grants, "authorization_code") {
		t.Errorf("discovery advertises PKCE %v and grants %v: want S256, password and authorization_code", doc.Methods, doc.Grants)
	}

	// The certificate is the test CA's: a client without it refuses Dex.
	_, err = (&http.Client{Timeout: 10 * time.Second}).Get(dex.Issuer + "/.well-known/openid-configuration")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting only the system's CAs got %v, want a certificate error", err)
	}
}

func TestPasswordGrantGivesAnIDTokenForTheClientsAudience(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	ctx := dex.Context(t.Context())
	idToken, accessToken, refreshToken := dex.PasswordLogin(t, "alice")
	if accessToken == "" || refreshToken == "" {
		t.Fatalf("access token %q, refresh token %q: want both", accessToken, refreshToken)
	}
	tok, err := verifier(t, ctx, dex, dextest.ClientMusterd).Verify(ctx, idToken)
	if err != nil {
		t.Fatalf("verify alice's ID token: %v", err)
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if c.Email != "alice@example.com" || tok.Subject == "" || tok.Issuer != dex.Issuer {
		t.Errorf("ID token: email %q, subject %q, issuer %q", c.Email, tok.Subject, tok.Issuer)
	}

	// The refresh token is Dex's own: it buys a new ID token for alice.
	conf := dex.OAuth2Config(t, dextest.ClientMusterd, dextest.LoginScopes...)
	refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	newID, _ := refreshed.Extra("id_token").(string)
	again, err := verifier(t, ctx, dex, dextest.ClientMusterd).Verify(ctx, newID)
	if err != nil {
		t.Fatalf("verify the refreshed ID token: %v", err)
	}
	if again.Subject != tok.Subject {
		t.Errorf("refreshed subject %q, want %q", again.Subject, tok.Subject)
	}
}

func TestCodeFlowWithPKCEThroughTheLoginForm(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	ctx := dex.Context(t.Context())
	conf := dex.OAuth2Config(t, dextest.ClientMusterd, "openid", "email", "offline_access")

	verifierS256 := oauth2.GenerateVerifier()
	code := dex.BrowserLogin(t, conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifierS256)), "bob")
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifierS256))
	if err != nil {
		t.Fatalf("exchange bob's code: %v", err)
	}
	idToken, _ := tok.Extra("id_token").(string)
	verified, err := verifier(t, ctx, dex, dextest.ClientMusterd).Verify(ctx, idToken)
	if err != nil {
		t.Fatalf("verify bob's ID token: %v", err)
	}
	var c claims
	if err := verified.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if c.Email != "bob@example.com" || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Errorf("email %q, access token set %v, refresh token set %v", c.Email, tok.AccessToken != "", tok.RefreshToken != "")
	}

	// Dex enforces the challenge: a code redeemed with another verifier is
	// refused.
	code = dex.BrowserLogin(t, conf.AuthCodeURL("state-2", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "bob")
	_, err = conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier()))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("exchange with the wrong verifier: %v, want invalid_grant", err)
	}
}

func TestATokenForAnotherClientFailsVerification(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	ctx := dex.Context(t.Context())
	other, _ := dex.PasswordToken(t, dextest.ClientOther, "alice").Extra("id_token").(string)

	_, err := verifier(t, ctx, dex, dextest.ClientMusterd).Verify(ctx, other)
	if err == nil || !strings.Contains(err.Error(), "audience") {
		t.Errorf("verify another client's ID token for %s: %v, want an audience error", dextest.ClientMusterd, err)
	}
	if _, err := verifier(t, ctx, dex, dextest.ClientOther).Verify(ctx, other); err != nil {
		t.Errorf("the same token for its own client: %v", err)
	}
}

func TestPlainHTTPAndAWrongPassword(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{Users: []dextest.User{
		{Username: "carol", Email: "carol@example.com", Password: "right", UserID: "carol-id"},
	}})
	if !strings.HasPrefix(dex.Issuer, "http://127.0.0.1:") || dex.CAFile != "" {
		t.Fatalf("issuer %q, CA file %q: want plain HTTP without a CA", dex.Issuer, dex.CAFile)
	}
	ctx := dex.Context(t.Context())
	idToken, _, _ := dex.PasswordLogin(t, "carol")
	if _, err := verifier(t, ctx, dex, dextest.ClientMusterd).Verify(ctx, idToken); err != nil {
		t.Fatalf("verify carol's ID token: %v", err)
	}
	conf := dex.OAuth2Config(t, dextest.ClientMusterd, "openid")
	if _, err := conf.PasswordCredentialsToken(ctx, "carol@example.com", "wrong"); err == nil {
		t.Error("Dex accepted a wrong password")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
