// Package authserver is musterd as an OAuth 2.1 authorization server,
// with its identity provider (Dex) upstream: a client registers at
// /oauth/register, sends its user to /oauth/authorize, which sends them to
// the provider to log in (after asking their consent, for a client that
// is not the operator's and redirects off the user's device); the provider sends them back to /oauth/callback,
// which sends them on to the client with musterd's code; /oauth/token
// redeems it for musterd's access and refresh tokens, /oauth/revoke
// revokes them, and /.well-known/oauth-authorization-server and
// /.well-known/openid-configuration describe it all.
//
// Place: an edge of musterd, beside package oauth/verify, wired by
// cmd/musterd into its HTTP mux and its check of callers. It imports
// package identity and package oauth/store (where everything it keeps
// lives: memory, or a sealed Valkey), nothing of the pipeline. The
// protocol work is zitadel/oidc's op package (request parsing, client
// authentication, redirect URI policy, the PKCE check, error answers,
// discovery), behind a Storage of musterd's and a LegacyServer whose
// token endpoints musterd answers itself; the upstream login is
// golang.org/x/oauth2's (PKCE) and go-oidc's (discovery, the ID token's
// check). Nothing here parses a JWT or computes a PKCE challenge by hand.
//
// Guarantees:
//   - musterd's access and refresh tokens are opaque random strings
//     (prefixed mdat_ and mdrt_), stored by their SHA-256 only; codes and
//     login states likewise. musterd signs nothing: the id_token of its
//     token responses is the provider's own ID token of that login
//     (renewed at the provider when about to expire), and its discovery
//     names no jwks_uri.
//     That ID token is the provider's for musterd's client: its aud is
//     dex.clientId and its nonce musterd's own upstream one, so it tells
//     a client who logged in, but is not one a client should verify as
//     issued to itself (muster passes on the provider's the same way).
//   - PKCE is required, S256 only: an authorization request without a
//     challenge, or with plain, is refused back to the client. A code is
//     redeemed once, by the client it was issued to, with the redirect
//     URI it was issued for.
//   - Every authorization response carries iss (RFC 9207), and the
//     metadata says so (authorization_response_iss_parameter_supported).
//     An upstream callback whose iss names another issuer is refused.
//   - /oauth/callback acts only on a state musterd issued for a login
//     under way (single use, ten minutes); anything else gets an error
//     page and sends no one anywhere.
//   - The upstream login asks Upstream.Scopes plus ExtraScopes, uses PKCE
//     and a nonce, and accepts the login only when the ID token's issuer,
//     audience (musterd's client), expiry and nonce check (its signature
//     too, unless the token endpoint is reached over TLS, which OpenID
//     Connect lets stand for it).
//   - Access tokens last AccessTokenTTL (30 minutes), less when the
//     provider's token expires sooner. A refresh token lasts
//     SessionDuration (720h) and is single-use: each refresh rotates it,
//     and a rotated one presented again revokes its whole family (the
//     login). Revoking a refresh token revokes its family; revoking an
//     access token, that token. The changes of one family (its
//     rotations, the renewals of its provider tokens, its revocation)
//     are serialised within one musterd, and a renewal that waited on
//     the provider keeps nothing if the family is gone by then: a
//     revocation is never undone by a refresh under way. Several
//     musterds on one Valkey may still race: two rotations of one token
//     both answer with tokens (the refresh token kept last refreshes
//     next), and a revocation by one during another's renewal may be
//     undone by it.
//   - A refresh that needs the provider's tokens renewed ends the login
//     only when the provider refuses them (invalid_grant, 401, 403) or
//     gave no refresh token; a provider that cannot be reached, is slow
//     or fails otherwise gets the client server_error, and the refresh
//     token stays good for its retry. A refresh token is spent only once
//     its successor is kept, so a store failure midway is no reuse
//     either.
//   - A token exchange at /oauth/token is answered invalid_grant, before
//     any client authentication: musterd mints tokens for no other
//     audience.
//   - A login is also the provider's to end (upstreamcheck.go): each
//     request with one of musterd's access tokens asks the provider's
//     userinfo endpoint with the login's upstream access token (renewed
//     first when due), as muster asks its provider on every request; a
//     401 or 403 there, or invalid_grant at the renewal, revokes the
//     login's family and refuses the request. A provider that cannot be
//     reached, or does not answer within 5 s (standsTimeout, which bounds
//     the whole check), ends nothing, and the log says so. The answer is
//     never kept: the provider's revocation holds at the next request.
//     The provider's discovery is fetched outside any lock, so a stalled
//     provider holds up no request beyond its own bound.
//   - The provider's ID token a login hands the client (a token musterd
//     takes as it is) ends with the login: revoking a family notes the
//     digest of its current ID token until that expires, and
//     Authenticator refuses a noted token before any other check
//     (revokedid.go). An earlier ID token of the same login, handed out
//     before a renewal, is not noted.
//   - A client anyone could have made (a metadata document's, or one
//     registered without the registration token) whose redirect URI is a
//     site, neither http on loopback nor a private-use scheme, does not
//     reach the provider by a link alone: /oauth/authorize sends the user
//     first to a consent page (PathConsent, consent.go) naming the client
//     and the redirect URI's host. The page shows only to the browser
//     that opened the link (an HttpOnly, SameSite=Lax cookie, Secure
//     under an https issuer, with a token kept hashed); its answer needs
//     cookie and token, counts once, and is refused with a 400 page
//     otherwise. Approve goes on to the provider; Deny sends the client
//     access_denied with its state and iss; prompt=none, which allows no
//     page, sends it interaction_required. The page loads nothing, is
//     never framed or kept, and its forms go only to musterd, the
//     provider and the client's origin.
//   - Registration follows muster's rules (RegistrationToken,
//     AllowPublicClientRegistration, trusted schemes and URIs,
//     AllowLocalhostRedirectURIs, application_type web or native; omitted,
//     native when a redirect URI has a private-use scheme or all are http
//     on loopback, as for a metadata document). With
//     EnableCIMD a client ID that is the https URL of a Client ID
//     Metadata Document needs none: the document is fetched (bounded, no
//     redirects, never from a loopback, private or link-local address
//     unless CIMDAllowPrivateAddresses), must name that URL as client_id
//     and a public client, and is kept an hour.
//   - Authenticator lets in musterd's own access tokens as the login's
//     user (identity.Identity: the provider's sub and issuer, Session the
//     family) and hands any other token to the check it wraps; a bad one
//     of musterd's gets the 401 challenge naming the resource metadata.
//   - CORS answers go to AllowedOrigins (allowedOrigins) alone; with
//     none, to no origin (zitadel's own default would allow any).
//   - No token, code, state or secret reaches a log or an error; logs
//     name users by identity.LogTag.
package authserver
