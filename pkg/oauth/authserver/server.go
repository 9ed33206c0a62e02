package authserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/rs/cors"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Server is musterd's authorization server.
type Server struct {
	opts       Options
	cimdClient *http.Client
	storage    *storage
	upstream   *upstream
	provider   *op.Provider
	zitadel    http.Handler

	// families serialises the refreshes of one family in this process, so
	// that a rotation is not raced by another of the same token.
	familiesMu sync.Mutex
	families   map[string]*familyLock
}

// New returns the authorization server of opts.
func New(opts Options) (*Server, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	s := &Server{
		opts:     opts,
		storage:  &storage{kv: opts.Store, now: opts.Now},
		upstream: &upstream{opts: opts.Upstream, redirect: opts.Issuer + PathCallback, client: opts.HTTPClient, now: opts.Now},
		families: map[string]*familyLock{},
	}
	s.cimdClient = cimdClient(opts.HTTPClient, opts.CIMDAllowPrivateAddresses)
	if opts.EnableCIMD {
		s.storage.cimd = s.fetchCIMD
	}
	// The key zitadel seals its codes with; a code lives minutes and is
	// found by its hash, so a key of this process alone is enough.
	config := &op.Config{CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true}
	_, _ = rand.Read(config.CryptoKey[:])
	var popts []op.Option
	if strings.HasPrefix(opts.Issuer, "http://") {
		popts = append(popts, op.WithAllowInsecure()) // loopback only: defaults checked it
	}
	provider, err := op.NewProvider(config, s.storage, op.StaticIssuer(opts.Issuer), popts...)
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	s.provider = provider
	endpoints := op.Endpoints{
		Authorization: op.NewEndpoint(PathAuthorize),
		Token:         op.NewEndpoint(PathToken),
		Revocation:    op.NewEndpoint(PathRevoke),
	}
	srv := &server{LegacyServer: op.NewLegacyServer(provider, endpoints), as: s}
	// CORS for the browser clients of AllowedOrigins alone; none without.
	var corsOpts *cors.Options
	if len(opts.AllowedOrigins) > 0 {
		corsOpts = &cors.Options{
			AllowedOrigins: opts.AllowedOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost},
			AllowedHeaders: []string{"Authorization", "Content-Type", "Accept"},
		}
	}
	s.zitadel = op.RegisterLegacyServer(srv, http.NotFound, op.WithServerCORSOptions(corsOpts))
	return s, nil
}

// Paths are the paths Handler serves.
func (s *Server) Paths() []string {
	return []string{PathAuthorize, PathConsent, PathCallback, PathToken, PathRevoke, PathRegister, PathMetadata, PathOIDC}
}

// Handler serves Paths.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathAuthorize, withIss(s.opts.Issuer, s.zitadel))
	mux.HandleFunc(PathConsent, s.consent)
	mux.HandleFunc(PathCallback, s.callback)
	mux.Handle(PathToken, refuseExchange(s.zitadel))
	mux.Handle(PathRevoke, s.zitadel)
	mux.HandleFunc(PathRegister, s.register)
	mux.Handle(PathOIDC, s.zitadel)
	mux.Handle(PathMetadata, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// RFC 8414's document is the same as OpenID Connect's here.
		r2 := r.Clone(r.Context())
		r2.URL.Path = PathOIDC
		s.zitadel.ServeHTTP(w, r2)
	}))
	return mux
}

// server is zitadel's LegacyServer with musterd's own answers where
// musterd differs from an OpenID provider that mints and signs: the
// authorization request goes to the upstream provider, and the tokens are
// musterd's opaque ones with the provider's ID token.
type server struct {
	*op.LegacyServer
	as *Server
}

// metadata is the discovery document, with RFC 9207's flag, which
// zitadel's type lacks.
type metadata struct {
	*oidc.DiscoveryConfiguration
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
}

// MarshalJSON merges the flag into the embedded document's fields.
func (m metadata) MarshalJSON() ([]byte, error) {
	base, err := json.Marshal(m.DiscoveryConfiguration)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(base, &fields); err != nil {
		return nil, err
	}
	fields["authorization_response_iss_parameter_supported"] = m.IssParameterSupported
	return json.Marshal(fields)
}

func (s *server) Discovery(ctx context.Context, r *op.Request[struct{}]) (*op.Response, error) {
	resp, err := s.LegacyServer.Discovery(ctx, r)
	if err != nil {
		return nil, err
	}
	doc, ok := resp.Data.(*oidc.DiscoveryConfiguration)
	if !ok {
		return nil, errors.New("authserver: zitadel's discovery document changed type")
	}
	issuer := s.as.opts.Issuer
	doc.Issuer = issuer
	doc.RegistrationEndpoint = issuer + PathRegister
	doc.JwksURI = ""
	doc.CodeChallengeMethodsSupported = []oidc.CodeChallengeMethod{oidc.CodeChallengeMethodS256}
	doc.GrantTypesSupported = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
	doc.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
	doc.ResponseModesSupported = []string{"query"}
	doc.TokenEndpointAuthMethodsSupported = []oidc.AuthMethod{oidc.AuthMethodNone, oidc.AuthMethodBasic, oidc.AuthMethodPost}
	doc.RevocationEndpointAuthMethodsSupported = doc.TokenEndpointAuthMethodsSupported
	doc.ScopesSupported = []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, "groups", oidc.ScopeOfflineAccess}
	doc.ClaimsSupported = nil
	doc.IntrospectionEndpoint, doc.UserinfoEndpoint, doc.EndSessionEndpoint = "", "", ""
	resp.Data = metadata{DiscoveryConfiguration: doc, IssParameterSupported: true}
	return resp, nil
}

// Authorize keeps the request and sends the user to the provider, or
// first to the consent page when the client needs the user's leave
// (consent.go). PKCE with S256 is required (OAuth 2.1): a request without
// it, or with plain, is refused back to the client.
func (s *server) Authorize(ctx context.Context, r *op.ClientRequest[oidc.AuthRequest]) (*op.Redirect, error) {
	if r.Data.ResponseType != oidc.ResponseTypeCode {
		return op.TryErrorRedirect(ctx, r.Data, oidc.ErrUnauthorizedClient().WithDescription("only response_type code is supported"), s.Provider().Encoder(), nil)
	}
	if r.Data.CodeChallenge == "" || r.Data.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return op.TryErrorRedirect(ctx, r.Data, oidc.ErrInvalidRequest().WithDescription("PKCE with code_challenge_method S256 is required"), s.Provider().Encoder(), nil)
	}
	consent := needsConsent(r.Client, r.Data.RedirectURI)
	if consent && slices.Contains(r.Data.Prompt, oidc.PromptNone) {
		// OpenID Connect: no page may be shown, so the client is told.
		return op.TryErrorRedirect(ctx, r.Data, oidc.ErrInteractionRequired().WithDescription("the user must allow this client on musterd's consent page first"), s.Provider().Encoder(), nil)
	}
	req, err := s.as.storage.CreateAuthRequest(ctx, r.Data, "")
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if consent {
		// A client anyone could have made, with a redirect URI off the
		// user's device: the user says first whether it may log them in.
		page, cookie, err := s.as.askConsent(ctx, req.GetID())
		if err != nil {
			return nil, oidc.ErrServerError().WithParent(err)
		}
		redirect := op.NewRedirect(page)
		redirect.Header.Add("Set-Cookie", cookie.String())
		redirect.Header.Set("Cache-Control", "no-store")
		return redirect, nil
	}
	to, err := s.as.beginUpstream(ctx, req.GetID())
	if err != nil {
		s.as.opts.Logger.Warn("authserver: a login could not be started at the identity provider", "error", err)
		return op.TryErrorRedirect(ctx, r.Data, oidc.ErrServerError().WithDescription("the identity provider cannot be reached"), s.Provider().Encoder(), nil)
	}
	return op.NewRedirect(to), nil
}

// TokenExchange is refused: musterd issues no tokens for other audiences.
func (s *server) TokenExchange(context.Context, *op.ClientRequest[oidc.TokenExchangeRequest]) (*op.Response, error) {
	return nil, errExchange
}

var errExchange = oidc.ErrInvalidGrant().WithDescription("musterd issues no tokens for other audiences: token exchange is not supported")

// refuseExchange answers a token-exchange grant before any client
// authentication: whoever asks, musterd mints nothing.
func refuseExchange(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.ParseForm() == nil && oidc.GrantType(r.PostForm.Get("grant_type")) == oidc.GrantTypeTokenExchange {
			op.WriteError(w, r, errExchange, nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withIss adds the issuer (RFC 9207) to the error responses the
// authorization endpoint sends back to a client; its successful answers
// leave from the callback, which adds it itself.
func withIss(issuer string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&issWriter{ResponseWriter: w, issuer: issuer}, r)
	})
}

type issWriter struct {
	http.ResponseWriter
	issuer string
}

func (w *issWriter) WriteHeader(code int) {
	if code >= 300 && code < 400 {
		if loc, err := url.Parse(w.Header().Get("Location")); err == nil && loc.Query().Has("error") {
			w.Header().Set("Location", addIss(loc, w.issuer))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// addIss returns u with the iss parameter.
func addIss(u *url.URL, issuer string) string {
	q := u.Query()
	if !q.Has("iss") {
		q.Set("iss", issuer)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
