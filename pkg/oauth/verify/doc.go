// Package verify checks the bearer tokens of musterd's callers and says
// who they are: a JWT from an issuer musterd trusts (its identity
// provider, or one of aggregator.oauth.server.trustedIssuers), verified
// against that issuer's keys, becomes an identity.Identity.
//
// Place: an edge helper, beside the endpoint's guard, which calls it; it
// imports only package identity. The protocol work is go-oidc's
// (discovery, the key set and its rotation, signature, issuer and expiry)
// and go-jose's (reading which issuer a token claims before choosing how
// to verify it); nothing here parses or checks a signature by hand.
//
// Guarantees:
//   - A token is accepted only when its issuer is one of Options.Issuers,
//     exactly; its signature verifies against that issuer's keys (from
//     its JWKSURL, else from its discovery document); it has not expired
//     (Options.Now); its audience includes one of the issuer's Audiences
//     (none listed: any); its typ header is one of AcceptedTypes (none
//     listed: any); and each of AllowedClaims matches. Anything else is
//     an error that wraps ErrInvalidToken and says which check failed,
//     never what the token holds.
//   - The Identity's Subject is the issuer's SubjectClaim (default sub),
//     which must be a non-empty string, and its Issuer is the issuer: one
//     subject from two issuers is two users.
//   - An issuer whose discovery fails is tried again at the next token,
//     not cached as failed; a verifier once built is reused.
//   - Tokens never appear in errors or logs.
package verify
