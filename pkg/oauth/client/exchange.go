package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Single sign-on by token exchange (RFC 8693), muster's
// spec.auth.tokenExchange: a server behind another identity provider,
// one that trusts musterd's provider through a connector (Dex's OIDC
// connector), takes a token of its own provider's, which musterd gets by
// trading the user's ID token for it at that provider's token endpoint.
// The request is muster's: subject_token the user's ID token, of type
// id_token, an id_token asked for in return (what a Kubernetes API
// server or an OIDC-checking MCP server takes as the user's identity),
// Dex's connector_id, the scopes. The answer's issuer is checked against
// the one expected: when the endpoint is reached through a proxy, a
// token that comes back from another provider than the one the server
// trusts is refused here, with why, rather than sent.
//
// An exchanged token is kept per (user, server, exchange settings) until
// EarlyExpiry before it expires, and traded anew when a server refuses it
// (Refused), so that a 401 gets one fresh token. Exchanges of one user for
// one server take turns: racing requests share one exchange.

// DefaultExchangeScopes are the scopes an Exchange asks for when it names
// none: muster's.
const DefaultExchangeScopes = "openid profile email groups"

const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
)

// ErrIssuerMismatch is wrapped by an exchange's error when the token the
// endpoint issued names another issuer than the one expected.
var ErrIssuerMismatch = errors.New("the exchanged token's issuer is not the expected one")

// Exchange is one server's token exchange, as its spec.auth.tokenExchange
// says.
type Exchange struct {
	// Endpoint is the provider's token endpoint (dexTokenEndpoint),
	// possibly through a proxy. Required.
	Endpoint string
	// ExpectedIssuer is the iss the exchanged token must carry. Default:
	// Endpoint without its trailing /token, as muster derives it.
	ExpectedIssuer string
	// ConnectorID is the provider's connector that trusts musterd's
	// provider (Dex's connector_id). Required.
	ConnectorID string
	// Scopes are asked for, space-separated. Default
	// DefaultExchangeScopes.
	Scopes string
	// Audiences are extra audiences the token must carry, asked for as
	// Dex's audience:server:client_id:<aud> scopes (spec.auth.
	// requiredAudiences), as muster asks for them.
	Audiences []string
	// ClientID and ClientSecret are musterd's client at the provider.
	// With no secret, musterd is a public client there: the client_id is
	// sent without a secret (Dex takes that of a client declared
	// public). With neither, nothing names the client.
	ClientID     string
	ClientSecret Secret
}

// Issuer is the issuer the exchanged token must carry: ExpectedIssuer,
// else Endpoint without its /token suffix.
func (x Exchange) Issuer() string {
	if x.ExpectedIssuer != "" {
		return strings.TrimSuffix(x.ExpectedIssuer, "/")
	}
	u, err := url.Parse(x.Endpoint)
	if err != nil {
		return strings.TrimSuffix(strings.TrimSuffix(x.Endpoint, "/token"), "/")
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/token"), "/")
	return u.String()
}

// scope is what the exchange asks for: its scopes and its audiences'.
func (x Exchange) scope() []string {
	scopes := strings.Fields(x.Scopes)
	if len(scopes) == 0 {
		scopes = strings.Fields(DefaultExchangeScopes)
	}
	for _, aud := range x.Audiences {
		scopes = append(scopes, "audience:server:client_id:"+aud)
	}
	return scopes
}

// fingerprint tells exchanges apart whose tokens may not be shared: a
// changed spec gets tokens of its own.
func (x Exchange) fingerprint() string {
	return strings.Join([]string{x.Endpoint, x.Issuer(), x.ConnectorID, strings.Join(x.scope(), " "), x.ClientID, string(x.ClientSecret)}, "\x00")
}

func (x Exchange) check() error {
	if x.Endpoint == "" {
		return errors.New("token exchange: no token endpoint (dexTokenEndpoint)")
	}
	if x.ConnectorID == "" {
		return errors.New("token exchange: no connector (connectorId)")
	}
	return nil
}

// ExchangerOptions configure an Exchanger.
type ExchangerOptions struct {
	// HTTPClient reaches the token endpoints; it carries the CAs of
	// -extra-ca-file. Default: a client on a clone of
	// http.DefaultTransport with a 30 s timeout.
	HTTPClient *http.Client
	// EarlyExpiry is how long before its expiry an exchanged token is
	// traded anew rather than sent. Default 30 s.
	EarlyExpiry time.Duration
	// Now is the clock of expiries. Default time.Now.
	Now func() time.Time
	// Logger gets a line per exchange, never a token. Default
	// slog.Default().
	Logger *slog.Logger
}

// Exchanger trades users' ID tokens for the tokens of the servers that
// take another provider's, and keeps them until they are due.
type Exchanger struct {
	opts    ExchangerOptions
	mu      sync.Mutex // guards entries
	entries map[exchangeKey]*exchanged
}

type exchangeKey struct{ owner, server, fingerprint string }

// exchanged is one key's token; its mutex makes the key's exchanges take
// turns.
type exchanged struct {
	mu    sync.Mutex
	token *oauth2.Token // nil: none yet, or refused
}

// NewExchanger returns an Exchanger of opts.
func NewExchanger(opts ExchangerOptions) *Exchanger {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: defaultTimeout}
	}
	if opts.EarlyExpiry <= 0 {
		opts.EarlyExpiry = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Logger = opts.Logger.With("component", "oauth-token-exchange")
	return &Exchanger{opts: opts, entries: map[exchangeKey]*exchanged{}}
}

// Exchange trades subject, a user's ID token, for a token of x's
// provider, and checks its issuer. It keeps nothing.
func (e *Exchanger) Exchange(ctx context.Context, x Exchange, subject string) (*oauth2.Token, error) {
	if err := x.check(); err != nil {
		return nil, err
	}
	if subject == "" {
		return nil, errors.New("token exchange: the user has no ID token to exchange")
	}
	conf := clientcredentials.Config{
		ClientID:     x.ClientID,
		ClientSecret: x.ClientSecret.Reveal(),
		TokenURL:     x.Endpoint,
		Scopes:       x.scope(),
		AuthStyle:    oauth2.AuthStyleInHeader,
		EndpointParams: url.Values{
			"grant_type":           {grantTokenExchange},
			"subject_token":        {subject},
			"subject_token_type":   {tokenTypeIDToken},
			"requested_token_type": {tokenTypeIDToken},
			"connector_id":         {x.ConnectorID},
		},
	}
	if x.ClientSecret == "" {
		conf.AuthStyle = oauth2.AuthStyleInParams // a public client: its ID alone
	}
	tok, err := conf.Token(context.WithValue(ctx, oauth2.HTTPClient, e.opts.HTTPClient))
	if err != nil {
		return nil, fmt.Errorf("token exchange at %s refused: %s", x.Endpoint, describe(err))
	}
	if err := e.checkIssuer(tok, x); err != nil {
		return nil, err
	}
	return tok, nil
}

// signatureAlgorithms are those a token may name for its issuer to be
// read: the JWS algorithms of OpenID providers.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// checkIssuer compares the iss of tok, a JWT, with x's issuer, as muster
// does (trailing slashes aside); the signature is the server's to check,
// the endpoint having been reached over the caller's TLS. An opaque token
// is checked by the response's id_token, when there is one; with neither,
// there is no issuer to check, as in muster. A JWT without exp gets its
// expiry from expires_in alone.
func (e *Exchanger) checkIssuer(tok *oauth2.Token, x Exchange) error {
	want := x.Issuer()
	raw := tok.AccessToken
	parsed, err := jwt.ParseSigned(raw, signatureAlgorithms)
	if err != nil {
		idToken, _ := tok.Extra("id_token").(string)
		if parsed, err = jwt.ParseSigned(idToken, signatureAlgorithms); err != nil {
			e.opts.Logger.Debug("token exchange: an opaque token and no ID token: its issuer is not checked", "endpoint", x.Endpoint)
			return nil
		}
	}
	var claims jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&claims); err != nil {
		return fmt.Errorf("token exchange at %s: the token's claims cannot be read: %v", x.Endpoint, err)
	}
	got := strings.TrimSuffix(claims.Issuer, "/")
	if got != want {
		return fmt.Errorf("token exchange at %s: %w: the token is issued by %q, not by %q as expected; if the endpoint is reached through a proxy, set spec.auth.tokenExchange.expectedIssuer to the provider's own issuer",
			x.Endpoint, ErrIssuerMismatch, got, want)
	}
	if tok.Expiry.IsZero() && claims.Expiry != nil && raw == tok.AccessToken {
		tok.Expiry = claims.Expiry.Time()
	}
	return nil
}

// TokenSource returns owner's source of exchanged tokens for server:
// each Token call gives the kept token while it is not due, else trades
// the ID token subject gives then. It implements Refused.
func (e *Exchanger) TokenSource(owner, server string, x Exchange, subject func() (string, error)) *ExchangeSource {
	return &ExchangeSource{e: e, key: exchangeKey{owner: owner, server: server, fingerprint: x.fingerprint()}, x: x, subject: subject}
}

// Forget drops the tokens kept for owner (its session ended).
func (e *Exchanger) Forget(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.entries {
		if k.owner == owner {
			delete(e.entries, k)
		}
	}
}

// ForgetServer drops the tokens kept for server (its spec changed, or it
// is gone).
func (e *Exchanger) ForgetServer(server string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.entries {
		if k.server == server {
			delete(e.entries, k)
		}
	}
}

// entry returns k's entry, made on first use; the entries of the same
// user and server under other settings (a spec since changed) go then,
// so that there is at most one per user and server.
func (e *Exchanger) entry(k exchangeKey) *exchanged {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.entries[k]
	if !ok {
		for other := range e.entries {
			if other.owner == k.owner && other.server == k.server {
				delete(e.entries, other)
			}
		}
		en = &exchanged{}
		e.entries[k] = en
	}
	return en
}

// due says whether tok must be traded anew.
func (e *Exchanger) due(tok *oauth2.Token) bool {
	return tok == nil || tok.AccessToken == "" ||
		!tok.Expiry.IsZero() && !e.opts.Now().Add(e.opts.EarlyExpiry).Before(tok.Expiry)
}

// ExchangeSource is one user's exchanged tokens for one server, as an
// oauth2.TokenSource.
type ExchangeSource struct {
	e       *Exchanger
	key     exchangeKey
	x       Exchange
	subject func() (string, error)
}

// Token returns the kept token, or trades the user's ID token for a new
// one when none is kept, it is due, or it was refused.
func (s *ExchangeSource) Token() (*oauth2.Token, error) {
	en := s.e.entry(s.key)
	en.mu.Lock()
	defer en.mu.Unlock()
	if !s.e.due(en.token) {
		return cloneToken(en.token), nil
	}
	subject, err := s.subject()
	if err != nil {
		return nil, fmt.Errorf("token exchange for %s: %w", s.key.server, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeoutOf(s.e.opts.HTTPClient))
	defer cancel()
	tok, err := s.e.Exchange(ctx, s.x, subject)
	if err != nil {
		en.token = nil
		return nil, err
	}
	en.token = tok
	s.e.opts.Logger.Info("token exchanged", "server", s.key.server, "owner", ownerLog(s.key.owner),
		"issuer", s.x.Issuer(), "connector", s.x.ConnectorID, "expiry", tok.Expiry)
	return cloneToken(tok), nil
}

// Refused says a server answered 401 to token: unless a newer token is
// kept already, the next Token call trades anew.
func (s *ExchangeSource) Refused(token string) {
	en := s.e.entry(s.key)
	en.mu.Lock()
	defer en.mu.Unlock()
	if en.token != nil && en.token.AccessToken == token {
		en.token = nil
	}
}

func cloneToken(t *oauth2.Token) *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, Expiry: t.Expiry}
}

func timeoutOf(hc *http.Client) time.Duration {
	if hc.Timeout > 0 {
		return hc.Timeout
	}
	return defaultTimeout
}
