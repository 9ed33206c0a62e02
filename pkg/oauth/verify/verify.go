package verify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/musterd/musterd/pkg/identity"
)

// ErrInvalidToken is wrapped by every refusal of Verify.
var ErrInvalidToken = errors.New("invalid token")

// Issuer is an issuer whose tokens musterd accepts, and on what terms.
type Issuer struct {
	// URL is the issuer, exactly as its tokens' iss claim says it.
	URL string
	// JWKSURL is where its signing keys are. Default: from its OIDC
	// discovery document at URL.
	JWKSURL string
	// Audiences are the aud values accepted; a token must carry one.
	// Default: any audience.
	Audiences []string
	// AcceptedTypes are the typ header values accepted ("" for a token
	// without one). Default: any.
	AcceptedTypes []string
	// AllowedClaims requires each named claim to be a string matching its
	// pattern: exact, or a glob where * spans any characters and ? one.
	// Default: no requirement.
	AllowedClaims map[string]string
	// SubjectClaim names the claim that is the user. Default "sub".
	SubjectClaim string
}

// Options configures a Verifier.
type Options struct {
	// Issuers are the issuers whose tokens are accepted. Required.
	Issuers []Issuer
	// HTTPClient fetches discovery documents and keys (musterd's outbound
	// transport, with its extra CAs). Default: http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock expiry, and the age of userinfo's answers, are
	// judged by. Default: time.Now.
	Now func() time.Time
	// UserInfoIssuer, when set, is the URL of one of Issuers (the identity
	// provider) whose userinfo endpoint vouches for tokens that are no JWT:
	// such a token names the user userinfo's sub names. Default: none, and
	// a token that is no JWT is refused.
	UserInfoIssuer string
	// UserInfoTimeout bounds the check of one such token, the provider's
	// discovery included. Default: 10 s.
	UserInfoTimeout time.Duration
	// UserInfoCacheTTL is how long userinfo's answer for a token is reused
	// (never past the token's exp, when userinfo gives one). Default: 60 s.
	UserInfoCacheTTL time.Duration
	// UserInfoCacheSize bounds the answers kept. Default: 1024.
	UserInfoCacheSize int
	// Log receives what an operator must know: a provider that cannot be
	// asked about a token. Default: nowhere.
	Log *slog.Logger
}

// Verifier verifies bearer tokens. Safe for concurrent use.
type Verifier struct {
	opts    Options
	issuers map[string]*issuer

	userInfo *issuer        // the issuer asked about tokens that are no JWT; nil: none
	cache    *userInfoCache // userinfo's answers
}

type issuer struct {
	Issuer
	claims map[string]*regexp.Regexp

	mu       sync.Mutex
	provider *oidc.Provider        // from discovery, at first use
	verifier *oidc.IDTokenVerifier // built at first use
}

// signingAlgorithms are those go-oidc verifies.
var signingAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA}

// New returns a Verifier of opts.
func New(opts Options) (*Verifier, error) {
	if len(opts.Issuers) == 0 {
		return nil, errors.New("verify: no issuer to trust")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.UserInfoTimeout <= 0 {
		opts.UserInfoTimeout = defaultUserInfoTimeout
	}
	if opts.UserInfoCacheTTL <= 0 {
		opts.UserInfoCacheTTL = defaultUserInfoCacheTTL
	}
	if opts.UserInfoCacheSize <= 0 {
		opts.UserInfoCacheSize = defaultUserInfoCacheSize
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{opts: opts, issuers: map[string]*issuer{}}
	for i, is := range opts.Issuers {
		if is.URL == "" {
			return nil, fmt.Errorf("verify: issuers[%d]: no issuer URL", i)
		}
		if _, dup := v.issuers[is.URL]; dup {
			return nil, fmt.Errorf("verify: issuers[%d]: %s is listed twice", i, is.URL)
		}
		if is.SubjectClaim == "" {
			is.SubjectClaim = "sub"
		}
		compiled := map[string]*regexp.Regexp{}
		for claim, pattern := range is.AllowedClaims {
			compiled[claim] = glob(pattern)
		}
		v.issuers[is.URL] = &issuer{Issuer: is, claims: compiled}
	}
	if opts.UserInfoIssuer != "" {
		v.userInfo = v.issuers[opts.UserInfoIssuer]
		if v.userInfo == nil {
			return nil, fmt.Errorf("verify: the userinfo issuer %s is not one of the issuers", opts.UserInfoIssuer)
		}
		v.cache = newUserInfoCache(opts.UserInfoCacheSize)
	}
	return v, nil
}

// glob compiles a pattern where * spans any characters, ? one, and
// everything else is itself.
func glob(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}

// IsJWT tells whether raw has the form of a signed JWT (whatever its
// issuer or signature): one a server downstream can verify, as a token that
// is no JWT only its provider can.
func IsJWT(raw string) bool {
	_, err := jwt.ParseSigned(raw, signingAlgorithms)
	return err == nil
}

// Verify checks raw and returns whom it names.
func (v *Verifier) Verify(ctx context.Context, raw string) (identity.Identity, error) {
	// Which issuer it claims, to choose how to verify it; nothing read
	// here is trusted until go-oidc has verified the token.
	parsed, err := jwt.ParseSigned(raw, signingAlgorithms)
	if err != nil {
		if v.userInfo != nil {
			return v.viaUserInfo(ctx, raw)
		}
		return identity.Identity{}, refuse("not a signed JWT")
	}
	var claimed struct {
		Issuer string `json:"iss"`
	}
	if err := parsed.UnsafeClaimsWithoutVerification(&claimed); err != nil {
		return identity.Identity{}, refuse("unreadable claims")
	}
	is, ok := v.issuers[claimed.Issuer]
	if !ok {
		return identity.Identity{}, refuse("issuer %q is not trusted", claimed.Issuer)
	}
	if len(is.AcceptedTypes) > 0 {
		typ, _ := parsed.Headers[0].ExtraHeaders[jose.HeaderType].(string)
		if !slices.Contains(is.AcceptedTypes, typ) {
			return identity.Identity{}, refuse("typ %q is not accepted from %s", typ, is.URL)
		}
	}
	verifier, err := v.verifierOf(ctx, is)
	if err != nil {
		return identity.Identity{}, err
	}
	token, err := verifier.Verify(oidc.ClientContext(ctx, v.opts.HTTPClient), raw)
	if err != nil {
		if _, expired := errors.AsType[*oidc.TokenExpiredError](err); expired {
			return identity.Identity{}, refuse("expired")
		}
		return identity.Identity{}, refuse("verification against %s failed: %v", is.URL, err)
	}
	if len(is.Audiences) > 0 && !slices.ContainsFunc(token.Audience, func(aud string) bool { return slices.Contains(is.Audiences, aud) }) {
		return identity.Identity{}, refuse("audience %q is not one %s's tokens are accepted for", token.Audience, is.URL)
	}
	var claims map[string]any
	if err := token.Claims(&claims); err != nil {
		return identity.Identity{}, refuse("unreadable claims")
	}
	for claim, pattern := range is.claims {
		value, ok := claims[claim].(string)
		if !ok || !pattern.MatchString(value) {
			return identity.Identity{}, refuse("claim %s does not match %q", claim, is.AllowedClaims[claim])
		}
	}
	subject, _ := claims[is.SubjectClaim].(string)
	if subject == "" {
		return identity.Identity{}, refuse("no string claim %s to name the user", is.SubjectClaim)
	}
	return identity.Identity{Subject: subject, Issuer: is.URL}, nil
}

// verifierOf returns is's go-oidc verifier, made at first use: from its
// JWKSURL, or from its discovery document. A discovery that fails is
// tried again at the next token.
func (v *Verifier) verifierOf(ctx context.Context, is *issuer) (*oidc.IDTokenVerifier, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.verifier != nil {
		return is.verifier, nil
	}
	// Audiences are checked by Verify, against the whole list. go-oidc
	// keeps only the HTTP client of these contexts, never their end.
	config := &oidc.Config{SkipClientIDCheck: true, Now: v.opts.Now}
	ctx = oidc.ClientContext(ctx, v.opts.HTTPClient)
	if is.JWKSURL != "" {
		// Without a discovery document to name the issuer's algorithms,
		// go-oidc would take RS256 alone; every asymmetric one is as safe
		// (the key's own type must fit), and workload issuers sign ES256.
		for _, alg := range signingAlgorithms {
			config.SupportedSigningAlgs = append(config.SupportedSigningAlgs, string(alg))
		}
		is.verifier = oidc.NewVerifier(is.URL, oidc.NewRemoteKeySet(ctx, is.JWKSURL), config)
		return is.verifier, nil
	}
	provider, err := is.discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the keys of %s cannot be found: %v", ErrInvalidToken, is.URL, err)
	}
	is.verifier = provider.Verifier(config)
	return is.verifier, nil
}

// providerOf returns is's discovery document, read at first use; one
// that cannot be read is tried again at the next token.
func (v *Verifier) providerOf(ctx context.Context, is *issuer) (*oidc.Provider, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.discover(oidc.ClientContext(ctx, v.opts.HTTPClient))
}

// discover reads is's discovery document once it is read well; is.mu is
// held.
func (is *issuer) discover(ctx context.Context) (*oidc.Provider, error) {
	if is.provider != nil {
		return is.provider, nil
	}
	provider, err := oidc.NewProvider(ctx, is.URL)
	if err != nil {
		return nil, err
	}
	is.provider = provider
	return provider, nil
}
