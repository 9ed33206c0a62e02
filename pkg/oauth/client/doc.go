// Package client is musterd as an OAuth 2.1 client of the protected MCP
// servers it connects to for its users: it finds a server's
// authorization server, runs a user's login there through musterd's
// /oauth/proxy/start and /oauth/proxy/callback (muster's
// core_auth_login), and keeps and refreshes the user's token per issuer.
//
// Place: a library beside the supervisor, below the wiring. It knows no
// stage: the wiring mounts Handler beside /mcp, core_auth_login calls
// Issuer and Begin, the supervisor's per-user connections take their
// bearer from TokenSource (and tell it, Refused, of a 401), and OnLogin
// tells the wiring a user may now be connected. Per-user state is keyed
// by the owner string (identity.Identity.Owner), tokens by (owner,
// issuer), so one login serves every server of an issuer. For single
// sign-on by token exchange, an Exchanger gives the supervisor a token
// source per (owner, server).
//
// Guarantees:
//   - Discovery is muster's, lenient: the challenge's resource_metadata
//     URL, then {origin}/.well-known/oauth-protected-resource{path}, then
//     the root form; a PRM is taken when its resource is the server's URL
//     or its origin. Then the issuer's RFC 8414 or OpenID metadata, which
//     must name that issuer and S256 PKCE. Finding none is a NoIssuerError
//     naming the server and why each candidate failed.
//   - A login uses PKCE S256, a random state that is single use and
//     expires after Options.StateTTL (10 minutes), the RFC 8707 resource
//     (in the authorization and the code exchange), and the redirect URI
//     {PublicURL}{CallbackPath}. The start URL only redirects to the
//     authorization URL stored with a live state: a request cannot steer
//     it. OnLogin returns before the callback answers the browser. The callback refuses
//     (400, muster's texts) an unknown, used or expired state, a provider's
//     error, and an iss (RFC 9207) other than the login's issuer, or none
//     where the issuer promised one; a refused callback stores nothing.
//   - musterd's client at a provider is the preregistered one, else its
//     client metadata document URL (served by Handler) where the provider
//     reads those, else a dynamic registration (RFC 7591, with SEP-837's
//     application_type: native for a loopback PublicURL, web otherwise),
//     made once per issuer, else the document URL as muster does.
//   - A server whose authorization server changes (SEP-2352) is told to
//     OnIssuerChange; a dynamic registration at the old issuer is dropped
//     once no server names it.
//   - offline_access is asked for only when the provider lists it
//     (SEP-2207); a new login asks for the union of the server's scopes
//     and those already granted for that issuer (SEP-2350).
//   - A token is one owner's: no call with another owner reaches it. A
//     TokenSource reads the Store on every call and refreshes the token
//     EarlyExpiry (30 s) before it expires, or once a server refused it
//     (the source's Refused(token), or Invalidate); the
//     rotated refresh token is stored; refreshes of one (owner, issuer)
//     take turns. A refused refresh forgets the token and wraps
//     ErrLoginRequired.
//   - Token exchange (exchange.go, RFC 8693, spec.auth.tokenExchange): an
//     Exchanger trades a user's ID token at a server's provider for an ID
//     token of that provider's, as muster asks (subject and requested
//     token type id_token, Dex's connector_id, the scopes, a public client
//     when no secret is given), through golang.org/x/oauth2. A token whose
//     iss (read with go-jose; of the response's id_token when the token is
//     opaque) is not the expected issuer is refused with
//     ErrIssuerMismatch, naming both. An ExchangeSource keeps one user's
//     token for one server (and those exchange settings) until
//     EarlyExpiry (30 s) before it expires, trades anew after Refused of
//     the token it keeps, and never shares one user's token with another.
//   - No token, code, verifier or client secret reaches a log line, an
//     error or a page: the types holding them print as "<redacted>",
//     and a provider's error is reduced to its code and description.
package client
