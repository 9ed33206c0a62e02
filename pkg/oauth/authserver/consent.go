package authserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Consent guards against a confused deputy. musterd is one client at its
// provider, which may log a user in without asking anything; so anyone
// who can make a client here (a metadata document, an open registration)
// could send a user a link to /oauth/authorize naming their own redirect
// URI and PKCE challenge, and get the user's login at their own site.
// Before such a client's user is sent to the provider, musterd asks the
// user whether they allow it, naming the client and where the login is
// sent (MCP's security guidance for proxies with a static client ID).
//
// Not asked: the operator's clients (registered with the registration
// token), and redirect URIs only the user's own device receives (http
// on loopback, a private-use scheme), where a stranger's link leads
// nowhere but to the user.
//
// The page is bound to the browser that opened /oauth/authorize: that
// answer sets a cookie (HttpOnly, SameSite=Lax, Path the issuer's /oauth)
// holding a random token whose hash is kept with the request; the page
// shows only with the cookie, and the form carries the token back, which
// is good once.

// consentCookie is the name prefix of a consent's cookie; the request's ID
// completes it, so that two logins under way in one browser do not
// overwrite each other's.
const consentCookie = "musterd_consent_"

// consentRecord is a consent page shown: the hash of its token.
type consentRecord struct {
	Token string `json:"token"`
}

// needsConsent says whether a client's user is asked before a login with
// redirectURI.
func needsConsent(oc op.Client, redirectURI string) bool {
	if c, ok := oc.(client); ok && c.c.Operator {
		return false
	}
	u, err := url.Parse(redirectURI)
	if err != nil {
		return true
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return true
	case "http":
		return !loopback(u.Hostname())
	}
	return false // a private-use scheme: the app on the user's device
}

// askConsent keeps a consent token for the stored request id and returns
// where the browser goes to see the page, with the cookie that binds it.
func (s *Server) askConsent(ctx context.Context, id string) (string, *http.Cookie, error) {
	token := random(32)
	if err := putJSON(ctx, s.opts.Store, kindConsent+id, consentRecord{Token: hashed(token)}, RequestTTL); err != nil {
		return "", nil, err
	}
	return s.opts.Issuer + PathConsent + "?" + url.Values{"request": {id}}.Encode(), s.consentCookie(id, token, int(RequestTTL.Seconds())), nil
}

// consentCookie is the cookie of request id's consent; maxAge -1 removes
// it.
func (s *Server) consentCookie(id, token string, maxAge int) *http.Cookie {
	path := "/oauth"
	secure := false
	if u, err := url.Parse(s.opts.Issuer); err == nil {
		path = strings.TrimSuffix(u.Path, "/") + "/oauth"
		secure = u.Scheme == "https"
	}
	return &http.Cookie{Name: consentCookie + id, Value: token, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
}

// consent serves PathConsent: GET shows the page to the browser holding
// the request's cookie, POST takes its answer.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.showConsent(w, r)
	case http.MethodPost:
		s.answerConsent(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		consentRefusal(w, http.StatusMethodNotAllowed, "This page is opened by your client's sign-in link.")
	}
}

// Texts of the refusals: the user's way out is to start again.
const (
	consentUnknown  = "This sign-in request is unknown, has expired, was already answered, or was started in another browser. Start the sign-in again from your application."
	consentBadForm  = "This answer does not belong to a sign-in request of this browser. Start the sign-in again from your application."
	consentNoDecide = "The answer must be Approve or Deny."
)

// bound says whether the browser's cookie of request id holds token.
func bound(r *http.Request, id, token string) bool {
	if id == "" || token == "" {
		return false
	}
	c, err := r.Cookie(consentCookie + id)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(token)) == 1
}

// consentFor reads the consent kept for request id and says whether token
// is its token.
func (s *Server) consentFor(ctx context.Context, id, token string, take bool) (bool, error) {
	var rec consentRecord
	var err error
	if take {
		err = takeJSON(ctx, s.opts.Store, kindConsent+id, &rec)
	} else {
		err = getJSON(ctx, s.opts.Store, kindConsent+id, &rec)
	}
	if errors.Is(err, errNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare([]byte(rec.Token), []byte(hashed(token))) == 1, nil
}

func (s *Server) showConsent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.URL.Query().Get("request")
	var token string
	if c, err := r.Cookie(consentCookie + id); err == nil && id != "" {
		token = c.Value
	}
	ok := false
	if token != "" {
		var err error
		if ok, err = s.consentFor(ctx, id, token, false); err != nil {
			s.opts.Logger.Warn("authserver: a consent could not be read", "error", err)
		}
	}
	if !ok {
		consentRefusal(w, http.StatusBadRequest, consentUnknown)
		return
	}
	rec, err := s.storage.request(ctx, id)
	if err != nil {
		consentRefusal(w, http.StatusBadRequest, consentUnknown)
		return
	}
	redirect, err := url.Parse(rec.RedirectURI)
	if err != nil {
		consentRefusal(w, http.StatusBadRequest, consentUnknown)
		return
	}
	c, err := s.storage.client(ctx, rec.ClientID)
	if err != nil {
		consentRefusal(w, http.StatusBadRequest, "The application of this sign-in request is no longer known here. Start the sign-in again from your application.")
		return
	}
	view := consentView{Name: c.Name, ClientID: c.ID, Host: redirect.Host, RedirectURI: rec.RedirectURI,
		Action: s.opts.Issuer + PathConsent, Request: id, Token: token}
	if view.Name == "" {
		view.Name = c.ID
	}
	// Chrome and Safari hold form-action to every redirect after the
	// submission too: the provider (approve) and the client (deny, or a
	// provider that remembers the user) must be allowed besides 'self'.
	sources := []string{"'self'"}
	if p, err := s.upstream.discover(ctx); err == nil {
		sources = appendOrigin(sources, p.Endpoint().AuthURL)
	}
	sources = appendOrigin(sources, rec.RedirectURI)
	securePage(w, strings.Join(sources, " "))
	w.WriteHeader(http.StatusOK)
	if err := consentPage.Execute(w, view); err != nil {
		s.opts.Logger.Warn("authserver: the consent page could not be written", "error", err)
	}
}

func (s *Server) answerConsent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		consentRefusal(w, http.StatusBadRequest, consentBadForm)
		return
	}
	id, token, decision := r.PostForm.Get("request"), r.PostForm.Get("token"), r.PostForm.Get("decision")
	if !bound(r, id, token) {
		consentRefusal(w, http.StatusBadRequest, consentBadForm)
		return
	}
	if decision != "approve" && decision != "deny" {
		consentRefusal(w, http.StatusBadRequest, consentNoDecide)
		return
	}
	ok, err := s.consentFor(ctx, id, token, true)
	if err != nil {
		s.opts.Logger.Warn("authserver: a consent could not be read", "error", err)
	}
	if !ok {
		consentRefusal(w, http.StatusBadRequest, consentUnknown)
		return
	}
	http.SetCookie(w, s.consentCookie(id, "", -1))
	rec, err := s.storage.request(ctx, id)
	if err != nil {
		consentRefusal(w, http.StatusBadRequest, consentUnknown)
		return
	}
	if decision == "deny" {
		s.opts.Logger.Info("authserver: a user denied a client", "client", rec.ClientID)
		_ = s.storage.DeleteAuthRequest(ctx, id)
		back, err := op.TryErrorRedirect(ctx, authRequest{rec}.oidc(), oidc.ErrAccessDenied().WithDescription("the user did not allow the client"), s.provider.Encoder(), nil)
		if err != nil {
			consentRefusal(w, http.StatusBadRequest, "You denied the application; it cannot be told.")
			return
		}
		loc, err := url.Parse(back.URL)
		if err != nil {
			consentRefusal(w, http.StatusBadRequest, "You denied the application; it cannot be told.")
			return
		}
		http.Redirect(w, r, addIss(loc, s.opts.Issuer), http.StatusSeeOther)
		return
	}
	to, err := s.beginUpstream(ctx, id)
	if err != nil {
		s.opts.Logger.Warn("authserver: a login could not be started at the identity provider", "error", err)
		consentRefusal(w, http.StatusBadGateway, "The identity provider cannot be reached. Start the sign-in again from your application later.")
		return
	}
	s.opts.Logger.Info("authserver: a user allowed a client", "client", rec.ClientID)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// origin is a CSP source: an http(s) URL's scheme and host, nothing that
// could end the directive.
var origin = regexp.MustCompile(`^https?://[A-Za-z0-9.\-]+(:[0-9]+)?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

func appendOrigin(sources []string, raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return sources
	}
	o := strings.ToLower(u.Scheme) + "://" + u.Host
	if !origin.MatchString(o) {
		return sources
	}
	for _, s := range sources {
		if s == o {
			return sources
		}
	}
	return append(sources, o)
}

// securePage sets the headers of musterd's consent pages: nothing loads,
// nothing frames them, nothing keeps them; forms go to formAction.
func securePage(w http.ResponseWriter, formAction string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; form-action "+formAction+"; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// consentRefusal answers a consent that cannot go on with a page saying
// why.
func consentRefusal(w http.ResponseWriter, status int, text string) {
	securePage(w, "'none'")
	w.WriteHeader(status)
	_ = refusalPage.Execute(w, text)
}

type consentView struct {
	Name, ClientID, Host, RedirectURI string
	Action, Request, Token            string
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Allow {{.Name}}? · musterd</title></head>
<body>
<h1>Allow {{.Name}} to sign you in to musterd?</h1>
<p>The application <strong>{{.Name}}</strong> (client ID <code>{{.ClientID}}</code>) asks to use your musterd login.</p>
<p>If you approve, you sign in at your identity provider and are then sent to <strong>{{.Host}}</strong>
(<code>{{.RedirectURI}}</code>), which can then act in musterd as you.</p>
<p>Approve only if you started this sign-in yourself and trust <strong>{{.Host}}</strong>.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.Request}}">
<input type="hidden" name="token" value="{{.Token}}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
</body></html>
`))

var refusalPage = template.Must(template.New("refusal").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>musterd</title></head>
<body><p>{{.}}</p></body></html>
`))
