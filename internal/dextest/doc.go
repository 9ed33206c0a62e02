// Package dextest runs a real OpenID Connect provider, Dex, as a child
// process for the tests of musterd's OAuth support, and logs its users in
// without a browser.
//
// Place: test support only, beside the pipeline; it imports nothing of
// musterd's.
//
// Guarantees:
//
//   - The binary is the one `make dex` builds from the Go module proxy into
//     .cache/dex/<Version>/dex (found upwards from the working directory),
//     or the one MUSTERD_DEX_BIN names. When it is missing the test is
//     skipped with a message that says to run `make dex`, unless
//     MUSTERD_REQUIRE_DEX=1 (set by `make test`), where it fails instead: a
//     suite that must run the OAuth tests never passes by skipping them.
//   - [Start] writes Dex's configuration into the test's temporary directory
//     (memory storage, the static clients and users of [Options], the local
//     password database as the password connector, no approval screen, the
//     authorization-code, refresh-token, password and token-exchange grants)
//     and runs Dex on a free loopback port. With [Options.TLS] Dex serves
//     HTTPS with a certificate from a certificate authority generated for
//     that test alone ([Dex.CAFile], [Dex.HTTPClient] trusts it and nothing
//     else). Start returns once Dex's discovery document answers and Dex
//     publishes a signing key; a port taken between choosing and binding it
//     is retried on another.
//   - With [Options.Trusts] Dex also has an OIDC connector per trusted Dex
//     (started before it): a token exchange (RFC 8693) at this Dex with
//     that connector_id takes the trusted Dex's ID token and answers with
//     this Dex's token for the same user, as one cluster's Dex trusts
//     another's in muster's cross-cluster single sign-on.
//   - [Dex.PasswordLogin] logs a user in with the password grant through
//     golang.org/x/oauth2; [Dex.BrowserLogin] follows an authorization URL
//     through Dex's login form as a browser would (cookies, redirects) and
//     returns the code Dex sends to the client's redirect URI, which it
//     does not follow. Either fails the test on any error.
//   - Dex is killed and waited for by t.Cleanup; its output goes to a log
//     file in the test's temporary directory, and its last lines are in the
//     error when it fails to start.
//
// Use:
//
//	dex := dextest.Start(t, dextest.Options{TLS: true})
//	id, access, refresh := dex.PasswordLogin(t, "alice")
//	conf := dex.OAuth2Config(dextest.ClientMusterd, "openid", "email")
//	verifier := oauth2.GenerateVerifier()
//	code := dex.BrowserLogin(t, conf.AuthCodeURL("state", oauth2.S256ChallengeOption(verifier)), "bob")
//	tok, err := conf.Exchange(dex.Context(ctx), code, oauth2.VerifierOption(verifier))
//
// Dex starts in well under a second on a 2-core machine; each test may run
// its own.
package dextest
