package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Discovery finds the authorization server of a protected server as
// muster does, which is more lenient than RFC 9728 alone: servers in the
// field (and muster's own test servers) name a resource_metadata URL
// that is a 404, or serve a PRM whose resource is their origin rather
// than their MCP URL. So the candidates are, in order, the challenge's
// resource_metadata URL, {origin}/.well-known/oauth-protected-resource{path}
// and the root form; a PRM is taken when its resource is the server's
// URL or its origin. A pinned issuer (spec.auth.authorizationServer)
// skips the PRM; in every case the issuer's metadata must name that
// issuer (RFC 8414 §3.3).

// NoIssuerError is the error of a discovery that found no authorization
// server for a server: no PRM answered, or none named one.
type NoIssuerError struct {
	// Server is the server's name.
	Server string
	// Tried says, per candidate URL, why it was not taken.
	Tried []string
}

func (e *NoIssuerError) Error() string {
	return fmt.Sprintf("server %q names no OAuth authorization server: no RFC 9728 protected resource metadata naming one (%s); pin one with spec.auth.authorizationServer.issuer",
		e.Server, strings.Join(e.Tried, "; "))
}

// prmCandidates returns the PRM URLs to try for s, in muster's order,
// without repeats.
func prmCandidates(s Server) ([]string, error) {
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("server %q: URL %q is not absolute", s.Name, s.URL)
	}
	origin := u.Scheme + "://" + u.Host
	var out []string
	add := func(c string) {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	add(s.ResourceMetadata)
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		add(origin + "/.well-known/oauth-protected-resource" + p)
	}
	add(origin + "/.well-known/oauth-protected-resource")
	return out, nil
}

// resourceMatches reports whether a PRM's resource is the server's URL
// or its origin (trailing slashes aside).
func resourceMatches(resource, serverURL string) bool {
	norm := func(s string) string { return strings.TrimSuffix(s, "/") }
	u, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	r := norm(resource)
	return r == norm(serverURL) || r == u.Scheme+"://"+u.Host
}

// issuerFromPRM returns the first authorization server the PRMs of s
// name, with the scopes the taken PRM supports.
func (c *Client) issuerFromPRM(ctx context.Context, s Server) (issuer string, scopes []string, err error) {
	candidates, err := prmCandidates(s)
	if err != nil {
		return "", nil, err
	}
	noIssuer := &NoIssuerError{Server: s.Name}
	for _, candidate := range candidates {
		prm, why := c.fetchPRM(ctx, candidate)
		switch {
		case why != "":
		case !resourceMatches(prm.Resource, s.URL):
			why = fmt.Sprintf("its resource %q is neither %s nor its origin", prm.Resource, s.URL)
		case len(prm.AuthorizationServers) == 0:
			why = "it names no authorization_servers"
		default:
			as := prm.AuthorizationServers[0]
			if u, perr := url.Parse(as); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				why = fmt.Sprintf("its authorization server %q is no http(s) URL", as)
				break
			}
			return as, prm.ScopesSupported, nil
		}
		noIssuer.Tried = append(noIssuer.Tried, candidate+": "+why)
		if ctx.Err() != nil {
			return "", nil, fmt.Errorf("server %q: discovery: %w", s.Name, ctx.Err())
		}
	}
	return "", nil, noIssuer
}

// fetchPRM GETs a PRM; why says what was wrong when it is unusable.
func (c *Client) fetchPRM(ctx context.Context, u string) (prm oauthex.ProtectedResourceMetadata, why string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return prm, err.Error()
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return prm, err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return prm, "answered " + resp.Status
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return prm, fmt.Sprintf("answered %q, not JSON", resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&prm); err != nil {
		return prm, "its JSON: " + err.Error()
	}
	return prm, ""
}

// metadataCandidates are the URLs of an issuer's metadata: RFC 8414's
// (the well-known segment before the issuer's path), then OpenID
// Connect Discovery's (after it), then the path-inserted OIDC form some
// providers serve.
func metadataCandidates(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("issuer %q is no http(s) URL", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	out := []string{origin + "/.well-known/oauth-authorization-server" + p, origin + p + "/.well-known/openid-configuration"}
	if p != "" {
		out = append(out, origin+"/.well-known/openid-configuration"+p)
	}
	return out, nil
}

// discovered is an issuer's metadata, as cached.
type discovered struct {
	meta    *oauthex.AuthServerMeta
	fetched time.Time
}

// metadata returns issuer's metadata, cached for Options.MetadataTTL.
func (c *Client) metadata(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	now := c.now()
	c.mu.Lock()
	d, ok := c.metas[issuer]
	c.mu.Unlock()
	if ok && now.Sub(d.fetched) < c.opts.MetadataTTL {
		return d.meta, nil
	}
	candidates, err := metadataCandidates(issuer)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, candidate := range candidates {
		// GetAuthServerMeta answers nil, nil for a 4xx: the next form.
		meta, err := oauthex.GetAuthServerMeta(ctx, candidate, issuer, c.http)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", candidate, err))
			continue
		}
		if meta == nil {
			continue
		}
		if meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" {
			errs = append(errs, fmt.Errorf("%s: names no authorization_endpoint or token_endpoint", candidate))
			continue
		}
		c.mu.Lock()
		c.metas[issuer] = discovered{meta: meta, fetched: now}
		c.mu.Unlock()
		return meta, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("authorization server %s serves no metadata at %s", issuer, strings.Join(candidates, ", "))
	}
	return nil, fmt.Errorf("authorization server %s: %w", issuer, errors.Join(errs...))
}

// Issuer returns the issuer of s's authorization server: the pinned one,
// else the one its PRM names. Its metadata is fetched (and cached) on
// the way, so an issuer that serves none is an error here, naming s.
func (c *Client) Issuer(ctx context.Context, s Server) (string, error) {
	issuer, _, err := c.discover(ctx, s)
	return issuer, err
}

// discover returns s's issuer and the scopes its PRM supports.
func (c *Client) discover(ctx context.Context, s Server) (string, []string, error) {
	issuer, prmScopes := s.Issuer, []string(nil)
	if issuer == "" {
		var err error
		if issuer, prmScopes, err = c.issuerFromPRM(ctx, s); err != nil {
			return "", nil, err
		}
	}
	if _, err := c.metadata(ctx, issuer); err != nil {
		return "", nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	c.noteIssuer(s.Name, issuer)
	return issuer, prmScopes, nil
}

// noteIssuer remembers that server's authorization server is issuer. A
// change (SEP-2352) drops the dynamic registration at the old one when
// no server names it any more, and tells OnIssuerChange: a client and
// tokens bound to one issuer must not be offered to another.
func (c *Client) noteIssuer(server, issuer string) {
	c.mu.Lock()
	old, known := c.issuers[server]
	c.issuers[server] = issuer
	changed := known && old != issuer
	if changed {
		inUse := false
		for _, other := range c.issuers {
			inUse = inUse || other == old
		}
		if r, ok := c.regs[old]; ok && !inUse && r.How == "dynamic registration" {
			delete(c.regs, old)
		}
	}
	c.mu.Unlock()
	if changed {
		c.log.Warn("oauth authorization server changed", "server", server, "old", old, "new", issuer)
		if c.opts.OnIssuerChange != nil {
			c.opts.OnIssuerChange(server, old, issuer)
		}
	}
}
