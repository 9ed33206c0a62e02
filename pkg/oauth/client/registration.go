package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// The client musterd is at a provider, per issuer (SEP-2352: a
// registration is bound to the issuer that made it). In order:
// the preregistered one (Options.ClientID); musterd's client metadata
// document URL where the provider says it reads such documents; a
// dynamic registration (RFC 7591) where the provider offers one; else the
// document URL anyway, which is what muster always sends.

// registration is musterd's client at one provider.
type registration struct {
	ClientID     string
	ClientSecret Secret
	// How is how it came to be: "preregistered", "metadata document" or
	// "dynamic registration".
	How string
}

// grantTypes are what musterd's logins use: the code, then refreshes.
var grantTypes = []string{"authorization_code", "refresh_token"}

// applicationType is SEP-837's application_type for musterd's public
// URL: "native" when the browser reaches musterd on a loopback address
// (a local install), "web" otherwise.
func (c *Client) applicationType() string {
	host := c.public.Hostname()
	if host == "localhost" {
		return "native"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return "native"
	}
	return "web"
}

// register returns musterd's client at issuer, registering it if need
// be. Registrations take turns (regMu), so two logins racing to a new
// provider do not make two clients; discovery goes on meanwhile.
func (c *Client) register(ctx context.Context, issuer string, meta *oauthex.AuthServerMeta) (*registration, error) {
	if c.opts.ClientID != "" {
		return &registration{ClientID: c.opts.ClientID, ClientSecret: Secret(c.opts.ClientSecret), How: "preregistered"}, nil
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	c.mu.Lock()
	r, ok := c.regs[issuer]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	switch {
	case meta.ClientIDMetadataDocumentSupported || meta.RegistrationEndpoint == "":
		r = &registration{ClientID: c.cimdURL, How: "metadata document"}
	default:
		resp, err := oauthex.RegisterClient(ctx, meta.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{c.redirect},
			TokenEndpointAuthMethod: c.authMethod(meta),
			GrantTypes:              grantTypes,
			ResponseTypes:           []string{"code"},
			ClientName:              c.opts.ClientName,
			ApplicationType:         c.applicationType(),
		}, c.http)
		if err != nil {
			return nil, fmt.Errorf("register musterd as a client at %s (RFC 7591, %s): %w", issuer, meta.RegistrationEndpoint, err)
		}
		r = &registration{ClientID: resp.ClientID, ClientSecret: Secret(resp.ClientSecret), How: "dynamic registration"}
	}
	c.mu.Lock()
	c.regs[issuer] = r
	c.mu.Unlock()
	c.log.Info("oauth client registered", "issuer", issuer, "how", r.How, "client_id", r.ClientID)
	return r, nil
}

// authMethod is the token endpoint authentication musterd asks for when
// it registers: client_secret_basic where offered (confidential, as a
// daemon is), else none (a public client, with PKCE).
func (c *Client) authMethod(meta *oauthex.AuthServerMeta) string {
	m := meta.TokenEndpointAuthMethodsSupported
	if len(m) == 0 || slices.Contains(m, "client_secret_basic") {
		return "client_secret_basic"
	}
	if slices.Contains(m, "client_secret_post") {
		return "client_secret_post"
	}
	return "none"
}

// config is the x/oauth2 config of a login or refresh at issuer.
func (c *Client) config(meta *oauthex.AuthServerMeta, reg *registration, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInParams // a public client names itself in the form
	if reg.ClientSecret != "" {
		style = oauth2.AuthStyleInHeader
		if m := meta.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "client_secret_basic") {
			style = oauth2.AuthStyleInParams
		}
	}
	return &oauth2.Config{
		ClientID:     reg.ClientID,
		ClientSecret: reg.ClientSecret.Reveal(),
		Endpoint:     oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: style},
		RedirectURL:  c.redirect,
		Scopes:       scopes,
	}
}

// clientMetadata is musterd's client metadata document (CIMD): its
// client_id is the document's own URL.
func (c *Client) clientMetadata() oauthex.ClientRegistrationMetadata {
	return oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{c.redirect},
		TokenEndpointAuthMethod: "none",
		GrantTypes:              grantTypes,
		ResponseTypes:           []string{"code"},
		ClientName:              c.opts.ClientName,
		ApplicationType:         c.applicationType(),
	}
}

func (c *Client) serveCIMD(w http.ResponseWriter, r *http.Request) {
	if c.opts.ClientID != "" {
		http.NotFound(w, r)
		return
	}
	doc := struct {
		ClientID string `json:"client_id"`
		oauthex.ClientRegistrationMetadata
	}{c.cimdURL, c.clientMetadata()}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_ = json.NewEncoder(w).Encode(doc)
}
