package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// cimdTTL is how long a fetched client metadata document is kept before
// it is fetched again.
const cimdTTL = time.Hour

// isCIMD says whether a client ID is a Client ID Metadata Document's URL:
// https with a path (draft-ietf-oauth-client-id-metadata-document §3).
func isCIMD(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && strings.Trim(u.Path, "/") != "" && u.Fragment == "" && u.User == nil
}

// cimdDocument is what musterd reads of a client metadata document.
type cimdDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
	ClientSecret            string   `json:"client_secret"`
}

// fetchCIMD fetches and checks the metadata document of a client ID: its
// client_id must be its URL, it is a public client (none), its redirect
// URIs pass registration's rules, and its grant and response types are
// the ones musterd serves. The fetch is bounded (10 s, 64 KiB, no
// redirects) and, unless CIMDAllowPrivateAddresses, reaches no loopback,
// private or link-local address: anyone can name any URL as client ID.
func (s *Server) fetchCIMD(ctx context.Context, id string) (*clientRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cimdClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the client's metadata document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the client's metadata document answered %s", resp.Status)
	}
	var doc cimdDocument
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("the client's metadata document is no JSON object: %w", err)
	}
	if doc.ClientID != id {
		return nil, errors.New("the client's metadata document names another client_id")
	}
	if doc.ClientSecret != "" || (doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none") {
		return nil, errors.New("a client of a metadata document is public here (token_endpoint_auth_method none)")
	}
	if len(doc.RedirectURIs) == 0 {
		return nil, errors.New("the client's metadata document has no redirect_uris")
	}
	c := &clientRecord{ID: id, Name: doc.ClientName, RedirectURIs: doc.RedirectURIs, AuthMethod: "none",
		GrantTypes: doc.GrantTypes, ResponseTypes: doc.ResponseTypes, IssuedAt: s.opts.Now()}
	for _, uri := range doc.RedirectURIs {
		isLoopbackHTTP, err := s.checkRedirect(uri)
		if err != nil {
			return nil, err
		}
		c.Loopback = c.Loopback || isLoopbackHTTP
	}
	// A native app on loopback picks its port at run time (RFC 8252 §7.3),
	// whatever the document declares; one with a private-use scheme is
	// native unless the document says web.
	c.Native = doc.ApplicationType == "native" || allLoopback(doc.RedirectURIs) ||
		(doc.ApplicationType == "" && nativeRedirects(doc.RedirectURIs))
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	if len(c.ResponseTypes) == 0 {
		c.ResponseTypes = []string{"code"}
	}
	for _, g := range c.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, fmt.Errorf("grant type %q is not served here", g)
		}
	}
	if !slices.Equal(c.ResponseTypes, []string{"code"}) {
		return nil, errors.New("response_types may be code only")
	}
	return c, nil
}

// allLoopback says whether every redirect URI is http on loopback.
func allLoopback(uris []string) bool {
	return !slices.ContainsFunc(uris, func(uri string) bool {
		u, err := url.Parse(uri)
		return err != nil || !strings.EqualFold(u.Scheme, "http") || !loopback(u.Hostname())
	})
}

// nonPublic are the ranges, beyond loopback, private, link-local and
// multicast ones, that reach no public server: "this network", the
// carrier-grade NAT range (a cloud's metadata service may sit there), the
// benchmarking and reserved ranges, broadcast, and the IPv6 translations
// of IPv4 (NAT64, 6to4, Teredo), which could carry a private address.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001::/32"),
}

// publicAddress reports whether host, an IP address as dialled, may be
// a public server's.
func publicAddress(host string) bool {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// cimdClient returns the client fetching metadata documents: base's
// transport (its CAs), no redirects, and unless allowPrivate a dialer
// that refuses loopback, private and link-local addresses, checked on
// the address actually dialled (no DNS rebinding).
func cimdClient(base *http.Client, allowPrivate bool) *http.Client {
	t, ok := base.Transport.(*http.Transport)
	if !ok || t == nil {
		t = http.DefaultTransport.(*http.Transport)
	}
	t = t.Clone()
	if !allowPrivate {
		dialer := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if !publicAddress(host) {
				return fmt.Errorf("a client metadata document at a private address (%s) is not fetched", host)
			}
			return nil
		}}
		t.DialContext = dialer.DialContext
		t.Proxy = nil // the address checked is the one dialled
	}
	return &http.Client{
		Transport:     t,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
