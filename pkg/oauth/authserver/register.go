package authserver

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// registration is an RFC 7591 request, as far as musterd reads it.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	Scope                   string   `json:"scope"`
	ApplicationType         string   `json:"application_type"`
}

// registered is the RFC 7591 answer.
type registered struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

// register is dynamic client registration (RFC 7591) on muster's terms:
//   - with AllowPublicClientRegistration anyone registers any client;
//   - else the registration token (Authorization: Bearer) registers a
//     confidential client, and redirect URIs of a trusted scheme or
//     trusted URIs register a client without it, public ones included;
//   - else 401 invalid_token; a public client without either is refused
//     with 400.
//
// Redirect URIs must be absolute, without a fragment; http only on a
// loopback host and with AllowLocalhostRedirectURIs. application_type is
// web or native (SEP-837); omitted, it is native when a redirect URI has a
// private-use scheme or all are http on loopback, else web.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req registration
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		registrationError(w, http.StatusBadRequest, "invalid_request", "Invalid JSON")
		return
	}
	if req.TokenEndpointAuthMethod == "" {
		req.TokenEndpointAuthMethod = "client_secret_basic" // RFC 7591 §2
	}
	if !slices.Contains([]string{"none", "client_secret_basic", "client_secret_post"}, req.TokenEndpointAuthMethod) {
		registrationError(w, http.StatusBadRequest, "invalid_client_metadata", "Unsupported token_endpoint_auth_method: "+req.TokenEndpointAuthMethod)
		return
	}
	public := req.TokenEndpointAuthMethod == "none"
	trusted := false
	switch {
	case s.opts.AllowPublicClientRegistration:
	case s.validRegistrationToken(r):
	case s.trustedRedirects(req.RedirectURIs):
		trusted = true
	default:
		registrationError(w, http.StatusUnauthorized, "invalid_token",
			"Registration requires authentication. Provide a valid registration token or use a trusted redirect URI scheme.")
		return
	}
	if public && !s.opts.AllowPublicClientRegistration && !trusted {
		registrationError(w, http.StatusBadRequest, "invalid_request",
			"Public client registration is not enabled on this server. Contact the server administrator.")
		return
	}
	switch req.ApplicationType {
	case "", "web", "native":
	default:
		registrationError(w, http.StatusBadRequest, "invalid_client_metadata", "application_type must be web or native")
		return
	}
	if len(req.RedirectURIs) == 0 {
		registrationError(w, http.StatusBadRequest, "invalid_redirect_uri", "at least one redirect_uri is required")
		return
	}
	loopbackHTTP := false
	for _, uri := range req.RedirectURIs {
		isLoopbackHTTP, err := s.checkRedirect(uri)
		if err != nil {
			registrationError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
			return
		}
		loopbackHTTP = loopbackHTTP || isLoopbackHTTP
	}
	if req.ApplicationType == "" {
		req.ApplicationType = "web" // RFC 7591's default, unless the redirect URIs say native
		if nativeRedirects(req.RedirectURIs) {
			req.ApplicationType = "native"
		}
	}
	if len(req.GrantTypes) == 0 {
		req.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			registrationError(w, http.StatusBadRequest, "invalid_client_metadata", "grant_types may be authorization_code and refresh_token only")
			return
		}
	}
	if len(req.ResponseTypes) == 0 {
		req.ResponseTypes = []string{"code"}
	}
	if !slices.Equal(req.ResponseTypes, []string{"code"}) {
		registrationError(w, http.StatusBadRequest, "invalid_client_metadata", "response_types may be code only")
		return
	}
	c := &clientRecord{
		ID: random(24), Name: req.ClientName, RedirectURIs: req.RedirectURIs, GrantTypes: req.GrantTypes,
		ResponseTypes: req.ResponseTypes, AuthMethod: req.TokenEndpointAuthMethod, Native: req.ApplicationType == "native",
		Loopback: loopbackHTTP, Operator: s.validRegistrationToken(r), IssuedAt: s.opts.Now(),
	}
	secret := ""
	if !public {
		secret = random(32)
		c.SecretHash = hashed(secret)
	}
	if err := putJSON(r.Context(), s.opts.Store, kindClient+c.ID, c, 0); err != nil {
		s.opts.Logger.Warn("authserver: a client could not be registered", "error", err)
		registrationError(w, http.StatusInternalServerError, "server_error", "Failed to register client")
		return
	}
	s.opts.Logger.Info("authserver: a client registered", "client", c.ID, "name", c.Name, "public", public, "application_type", req.ApplicationType)
	out := registered{
		ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: c.IssuedAt.Unix(), ClientName: c.Name,
		RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes,
		TokenEndpointAuthMethod: c.AuthMethod, ApplicationType: req.ApplicationType,
	}
	if secret != "" {
		never := int64(0)
		out.ClientSecretExpiresAt = &never
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) validRegistrationToken(r *http.Request) bool {
	if s.opts.RegistrationToken == "" {
		return false
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.opts.RegistrationToken)) == 1
}

// trustedRedirects says whether every URI is of a trusted scheme or is a
// trusted URI.
func (s *Server) trustedRedirects(uris []string) bool {
	if len(uris) == 0 {
		return false
	}
	for _, uri := range uris {
		u, err := url.Parse(uri)
		if err != nil {
			return false
		}
		if !slices.Contains(s.opts.TrustedPublicRegistrationRedirectURIs, uri) &&
			!slices.ContainsFunc(s.opts.TrustedPublicRegistrationSchemes, func(sc string) bool { return strings.EqualFold(sc, u.Scheme) }) {
			return false
		}
	}
	return true
}

// checkRedirect refuses a redirect URI that is not absolute, has a
// fragment, uses a scheme that runs code, or is http anywhere but on a
// loopback host with AllowLocalhostRedirectURIs. It says whether it is
// http on loopback.
func (s *Server) checkRedirect(uri string) (bool, error) {
	u, err := url.Parse(uri)
	if err != nil || !u.IsAbs() {
		return false, fmt.Errorf("redirect_uri %q is not an absolute URI", uri)
	}
	if u.Fragment != "" {
		return false, fmt.Errorf("redirect_uri %q has a fragment", uri)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return false, nil
	case "http":
		if !loopback(u.Hostname()) {
			return false, fmt.Errorf("redirect_uri %q: http is allowed on a loopback host only", uri)
		}
		if !s.opts.AllowLocalhostRedirectURIs {
			return false, fmt.Errorf("redirect_uri %q: loopback redirect URIs are not allowed here (allowLocalhostRedirectURIs)", uri)
		}
		return true, nil
	case "javascript", "data", "file", "vbscript", "blob":
		return false, fmt.Errorf("redirect_uri %q: scheme %s is not allowed", uri, u.Scheme)
	}
	return false, nil // a native app's private-use scheme (RFC 8252 §7.1)
}

// nativeRedirects says whether checked redirect URIs are a native app's
// (RFC 8252): one of a private-use scheme ("cursor://…"), which only an
// app on the user's device receives, or all of them http on loopback. A
// client that omits application_type with such URIs is native: zitadel
// refuses a custom scheme to a web client, and a loopback port is the
// app's choice at run time.
func nativeRedirects(uris []string) bool {
	allLoopback := len(uris) > 0
	for _, uri := range uris {
		u, err := url.Parse(uri)
		if err != nil {
			return false
		}
		switch strings.ToLower(u.Scheme) {
		case "https":
			allLoopback = false
		case "http":
			allLoopback = allLoopback && loopback(u.Hostname())
		default:
			return true
		}
	}
	return allLoopback
}

// loopback says whether host is localhost or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func registrationError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}
