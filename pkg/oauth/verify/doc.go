// Package verify checks the bearer tokens of musterd's callers and says
// who they are: a JWT from an issuer musterd trusts (its identity
// provider, or one of aggregator.oauth.server.trustedIssuers), verified
// against that issuer's keys, becomes an identity.Identity; so does a
// token that is no JWT which the identity provider's userinfo endpoint
// vouches for (the opaque access tokens many providers issue).
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
//     its JWKSURL, with any asymmetric algorithm, else from its discovery
//     document, with the algorithms it names); it has not expired
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
//   - A token that is no JWT is refused, unless Options.UserInfoIssuer is
//     set: then that issuer's userinfo endpoint (from its discovery
//     document, through go-oidc) is asked, and the user is the sub it
//     answers. Its answer is kept, by a SHA-256 digest of the token (never
//     the token), for UserInfoCacheTTL (60 s) or until the exp userinfo
//     gives, whichever is sooner, and at most UserInfoCacheSize answers are
//     kept; refusals are not kept. A 401 or 403 from userinfo is a refusal
//     of the token; a provider that cannot be reached, answers anything
//     else, or takes longer than UserInfoTimeout (10 s) is a refusal that
//     says the provider cannot be reached, logged at warning level. A JWT
//     is never sent there.
//   - Tokens never appear in errors or logs.
package verify
