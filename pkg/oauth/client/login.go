package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// A login is asynchronous, as muster's is: Begin stores the login's
// state and returns musterd's start URL; the browser (or muster's test
// harness) goes there, is sent to the provider, and comes back to the
// callback, perhaps much later and on another request, which finishes
// it. The state is random, single use and short lived; it binds the
// callback to the owner who began the login, the issuer the code must
// come from, and the PKCE verifier only musterd knows.

// offlineAccess is the scope that asks for a refresh token.
const offlineAccess = "offline_access"

// Begin starts owner's login to s and returns the URL to send them to:
// {PublicURL}/oauth/proxy/start?state=…. The provider's authorization
// URL it leads to asks for a code with PKCE (S256), the scopes of
// scopesFor, the resource s.URL (RFC 8707), and the redirect URI
// RedirectURI.
func (c *Client) Begin(ctx context.Context, owner string, s Server) (string, error) {
	if owner == "" {
		return "", fmt.Errorf("login to %q: no owner: a login is always someone's", s.Name)
	}
	issuer, prmScopes, err := c.discover(ctx, s)
	if err != nil {
		return "", err
	}
	meta, err := c.metadata(ctx, issuer)
	if err != nil {
		return "", fmt.Errorf("server %q: %w", s.Name, err)
	}
	if !supportsS256(meta) {
		return "", fmt.Errorf("server %q: authorization server %s does not advertise S256 PKCE (code_challenge_methods_supported %q); OAuth 2.1 forbids a login without it",
			s.Name, issuer, meta.CodeChallengeMethodsSupported)
	}
	reg, err := c.register(ctx, issuer, meta)
	if err != nil {
		return "", fmt.Errorf("server %q: %w", s.Name, err)
	}
	var granted []string
	if held, ok, err := c.store.Token(ctx, owner, issuer); err != nil {
		return "", fmt.Errorf("server %q: read the token store: %w", s.Name, err)
	} else if ok {
		granted = held.Scopes
	}
	scopes := scopesFor(s, prmScopes, granted, meta)

	c.sweep()

	nonce := rand.Text()
	verifier := oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if s.URL != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", s.URL))
	}
	authURL := c.config(meta, reg, scopes).AuthCodeURL(nonce, opts...)
	st := State{
		Owner: owner, Server: s.Name, ServerURL: s.URL, Issuer: issuer, ClientID: reg.ClientID,
		Verifier: Secret(verifier), Scopes: scopes, AuthURL: authURL, Expires: c.now().Add(c.opts.StateTTL),
	}
	if err := c.store.PutState(ctx, nonce, st); err != nil {
		return "", fmt.Errorf("server %q: store the login's state: %w", s.Name, err)
	}
	c.log.Info("oauth login begun", "server", s.Name, "issuer", issuer, "owner", ownerLog(owner), "scope", strings.Join(scopes, " "))
	return c.public.String() + StartPath + "?" + url.Values{"state": {nonce}}.Encode(), nil
}

// sweep drops expired states from a store that keeps them in memory.
func (c *Client) sweep() {
	if m, ok := c.store.(*MemoryStore); ok {
		m.Sweep(c.now())
	}
}

// scopesFor is what a login to s asks for: s.Scopes, else the
// challenge's scope, else what its PRM supports; with the scopes already
// granted for that issuer (SEP-2350: a new login must not lose what the
// last one got, as the token replaces it), and offline_access (a refresh
// token) only where the provider lists it (SEP-2207). Order is kept,
// without repeats.
func scopesFor(s Server, prmScopes, granted []string, meta *oauthex.AuthServerMeta) []string {
	want := s.Scopes
	if len(want) == 0 {
		want = strings.Fields(s.Scope)
	}
	if len(want) == 0 {
		want = prmScopes
	}
	var out []string
	add := func(list ...string) {
		for _, sc := range list {
			if sc != "" && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	add(want...)
	add(granted...)
	if slices.Contains(meta.ScopesSupported, offlineAccess) {
		add(offlineAccess)
	}
	return out
}

// errLogin is a callback refused, with the text the browser is shown.
type errLogin struct {
	page string // what the user reads
	why  string // what the log says
}

func (e *errLogin) Error() string { return e.why }

// The pages' texts, muster's.
const (
	textDenied   = "Authentication was denied or failed. Please try again."
	textMissing  = "Invalid callback: missing required parameters"
	textExpired  = "Authentication session expired. Please try again."
	textBadStart = "Invalid sign-in link: missing required parameters"
	textFailed   = "Failed to complete authentication. Please try again."
	textIssuer   = "Authentication response came from an unexpected issuer. Please try again."
)

// finish completes a login from its callback's query: it takes the
// state, checks the issuer (RFC 9207), exchanges the code with the
// verifier and stores the token. Nothing is stored unless all pass.
func (c *Client) finish(ctx context.Context, q url.Values) (State, error) {
	nonce, code := q.Get("state"), q.Get("code")
	if e := q.Get("error"); e != "" {
		if nonce != "" {
			_, _, _ = c.store.TakeState(ctx, nonce, c.now()) // a refused login is over
		}
		return State{}, &errLogin{textDenied, fmt.Sprintf("the provider answered error %q", e)}
	}
	if nonce == "" || code == "" {
		return State{}, &errLogin{textMissing, "callback without code or state"}
	}
	st, ok, err := c.store.TakeState(ctx, nonce, c.now())
	if err != nil {
		return State{}, &errLogin{textFailed, "read the state store: " + err.Error()}
	}
	if !ok {
		return State{}, &errLogin{textExpired, "callback with an unknown, used or expired state"}
	}
	meta, err := c.metadata(ctx, st.Issuer)
	if err != nil {
		return st, &errLogin{textFailed, err.Error()}
	}
	// RFC 9207: an iss that is not the issuer the login went to is a
	// mix-up (a code from another provider); a provider that promises iss
	// and sends none is refused too.
	if q.Has("iss") {
		if q.Get("iss") != st.Issuer {
			return st, &errLogin{textIssuer, fmt.Sprintf("the callback's iss %q is not the login's issuer %s", q.Get("iss"), st.Issuer)}
		}
	} else if meta.AuthorizationResponseIssParameterSupported {
		return st, &errLogin{textIssuer, fmt.Sprintf("issuer %s promises an iss parameter (RFC 9207) and the callback has none", st.Issuer)}
	}
	reg, err := c.register(ctx, st.Issuer, meta)
	if err != nil {
		return st, &errLogin{textFailed, err.Error()}
	}
	if reg.ClientID != st.ClientID {
		return st, &errLogin{textFailed, fmt.Sprintf("the client at %s changed since the login began", st.Issuer)}
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(st.Verifier.Reveal())}
	if st.ServerURL != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", st.ServerURL)) // RFC 8707 §2.2
	}
	tok, err := c.config(meta, reg, st.Scopes).Exchange(context.WithValue(ctx, oauth2.HTTPClient, c.http), code, opts...)
	if err != nil {
		return st, &errLogin{textFailed, "exchange the code at " + meta.TokenEndpoint + ": " + describe(err)}
	}
	if err := c.store.PutToken(ctx, st.Owner, st.Issuer, tokenFrom(tok, st.Scopes, reg.ClientID)); err != nil {
		return st, &errLogin{textFailed, "store the token: " + err.Error()}
	}
	return st, nil
}

// describe is an x/oauth2 error without the provider's response body,
// which is no place to trust with a secret: its error code and
// description only.
func describe(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := ""
		if re.Response != nil {
			status = re.Response.Status
		}
		if re.ErrorCode != "" {
			return fmt.Sprintf("%s: %s %s", status, re.ErrorCode, re.ErrorDescription)
		}
		return status
	}
	return err.Error()
}
