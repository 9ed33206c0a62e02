package authserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/musterd/musterd/pkg/oauth/store"
)

// storage is zitadel's op.Storage over musterd's store: the clients
// registered at /oauth/register, and the authorization requests with
// their codes. musterd mints its tokens itself (tokens.go), opaque and
// stored hashed, and signs nothing, so the methods of zitadel's own token
// minting and signing answer that they are not used.
type storage struct {
	kv  store.Store
	now func() time.Time
	// cimd, when set, fetches the client of a client ID that is a
	// metadata document's URL (cimd.go).
	cimd func(ctx context.Context, id string) (*clientRecord, error)
}

var _ op.Storage = (*storage)(nil)

var errNotMusterds = errors.New("authserver: not part of musterd's authorization server")

func (s *storage) client(ctx context.Context, id string) (*clientRecord, error) {
	var c clientRecord
	err := getJSON(ctx, s.kv, kindClient+id, &c)
	switch {
	case err == nil:
		return &c, nil
	case !errors.Is(err, errNotFound):
		return nil, err
	case s.cimd == nil || !isCIMD(id):
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client")
	}
	fetched, err := s.cimd(ctx, id)
	if err != nil {
		return nil, oidc.ErrInvalidClient().WithDescription("the client's metadata document: %s", err.Error())
	}
	if err := putJSON(ctx, s.kv, kindClient+id, fetched, cimdTTL); err != nil {
		return nil, err
	}
	return fetched, nil
}

func (s *storage) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return nil, err
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(ctx context.Context, clientID, clientSecret string) error {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return err
	}
	if c.SecretHash == "" || subtle.ConstantTimeCompare([]byte(c.SecretHash), []byte(hashed(clientSecret))) != 1 {
		return oidc.ErrInvalidClient().WithDescription("client authentication failed")
	}
	return nil
}

// CreateAuthRequest keeps an authorization request for RequestTTL.
func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	rec := &requestRecord{
		ID: random(16), ClientID: req.ClientID, RedirectURI: req.RedirectURI, State: req.State, Nonce: req.Nonce,
		Scopes: req.Scopes, ResponseType: string(req.ResponseType), ResponseMode: string(req.ResponseMode),
		CodeChallenge: req.CodeChallenge, CodeChallengeMethod: string(req.CodeChallengeMethod), Created: s.now(),
	}
	if err := putJSON(ctx, s.kv, kindRequest+rec.ID, rec, RequestTTL); err != nil {
		return nil, err
	}
	return authRequest{rec}, nil
}

func (s *storage) request(ctx context.Context, id string) (*requestRecord, error) {
	var rec requestRecord
	if err := getJSON(ctx, s.kv, kindRequest+id, &rec); err != nil {
		if errors.Is(err, errNotFound) {
			return nil, oidc.ErrInvalidGrant().WithDescription("the authorization request is unknown or has expired")
		}
		return nil, err
	}
	return &rec, nil
}

func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	rec, err := s.request(ctx, id)
	if err != nil {
		return nil, err
	}
	return authRequest{rec}, nil
}

// AuthRequestByCode finds a code's request, once: the code is spent by
// the lookup (RFC 6749 §4.1.2, a code is single-use).
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	data, found, err := s.kv.Take(ctx, kindCode+hashed(code))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, oidc.ErrInvalidGrant().WithDescription("the code is unknown, used or expired")
	}
	return s.AuthRequestByID(ctx, string(data))
}

// SaveAuthCode keeps the code zitadel issued for a request, by its hash.
func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	return s.kv.Put(ctx, kindCode+hashed(code), []byte(id), RequestTTL)
}

func (s *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	return s.kv.Delete(ctx, kindRequest+id)
}

func (s *storage) Health(ctx context.Context) error {
	_, _, err := s.kv.Get(ctx, kindClient+"health")
	return err
}

// SignatureAlgorithms are the provider's, whose ID tokens musterd passes
// on; musterd signs nothing itself.
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) { return nil, nil }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return nil, errNotMusterds }

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return "", time.Time{}, errNotMusterds
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNotMusterds
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return errNotMusterds }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrServerError().WithDescription("not used")
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return errNotMusterds
}

func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errNotMusterds
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errNotMusterds
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotMusterds
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errNotMusterds
}

// client is a registered client as zitadel sees it.
type client struct{ c *clientRecord }

var _ op.Client = client{}

func (c client) GetID() string                    { return c.c.ID }
func (c client) RedirectURIs() []string           { return slices.Clone(c.c.RedirectURIs) }
func (c client) PostLogoutRedirectURIs() []string { return nil }
func (c client) ApplicationType() op.ApplicationType {
	if c.c.Native {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}
func (c client) AuthMethod() oidc.AuthMethod { return oidc.AuthMethod(c.c.AuthMethod) }
func (c client) ResponseTypes() []oidc.ResponseType {
	out := make([]oidc.ResponseType, len(c.c.ResponseTypes))
	for i, t := range c.c.ResponseTypes {
		out[i] = oidc.ResponseType(t)
	}
	return out
}
func (c client) GrantTypes() []oidc.GrantType {
	out := make([]oidc.GrantType, len(c.c.GrantTypes))
	for i, t := range c.c.GrantTypes {
		out[i] = oidc.GrantType(t)
	}
	return out
}

// LoginURL is never followed: Authorize sends the user to the provider.
func (c client) LoginURL(string) string              { return "" }
func (c client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c client) IDTokenLifetime() time.Duration      { return 0 }

// DevMode lets a web client use the http loopback redirect URIs it was
// allowed to register (allowLocalhostRedirectURIs); zitadel refuses http
// for a public web client otherwise.
func (c client) DevMode() bool { return c.c.Loopback }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// IsScopeAllowed: musterd defines no scopes of its own, and refuses none a
// client asks for; what a user may do is decided by who they are.
func (c client) IsScopeAllowed(string) bool           { return true }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c client) ClockSkew() time.Duration             { return 0 }

// authRequest is a stored request as zitadel sees it.
type authRequest struct{ r *requestRecord }

var _ op.AuthRequest = authRequest{}

func (a authRequest) GetID() string                      { return a.r.ID }
func (a authRequest) GetACR() string                     { return "" }
func (a authRequest) GetAMR() []string                   { return nil }
func (a authRequest) GetAudience() []string              { return []string{a.r.ClientID} }
func (a authRequest) GetAuthTime() time.Time             { return a.r.AuthTime }
func (a authRequest) GetClientID() string                { return a.r.ClientID }
func (a authRequest) GetNonce() string                   { return a.r.Nonce }
func (a authRequest) GetRedirectURI() string             { return a.r.RedirectURI }
func (a authRequest) GetScopes() []string                { return a.r.Scopes }
func (a authRequest) GetState() string                   { return a.r.State }
func (a authRequest) GetSubject() string                 { return a.r.Subject }
func (a authRequest) Done() bool                         { return a.r.Subject != "" }
func (a authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseType(a.r.ResponseType) }
func (a authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseMode(a.r.ResponseMode) }
func (a authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.r.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.r.CodeChallenge, Method: oidc.CodeChallengeMethod(a.r.CodeChallengeMethod)}
}
