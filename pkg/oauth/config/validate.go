package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/musterd/musterd/pkg/redact"
)

// Validate checks c as Load does once every key is read, its errors naming
// keys below DefaultPath.
func (c Config) Validate() error { return c.validate(DefaultPath) }

// validate checks every key, and returns every fault found, each naming
// its key's path below prefix. A value given is checked whether or not
// its role is enabled; what a role needs is required only when it is.
func (c Config) validate(prefix string) error {
	v := &validation{}
	c.MCPClient.validate(v, prefix+".mcpClient")
	c.Server.validate(v, prefix+".server")
	return errors.Join(v.errs...)
}

type validation struct{ errs []error }

func (v *validation) add(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// required adds an error when value is empty and the role is enabled.
func (v *validation) required(path, value string, enabled bool, role string) {
	if value == "" && enabled {
		v.add(path, "required when %s.enabled is true", role)
	}
}

// url checks that value, if set, is an absolute URL on https, or on http
// only when its host is loopback: a token or a secret sent to it must not
// cross a network in the clear. It holds no credentials and no fragment.
func (v *validation) url(path, value string) {
	if value == "" {
		return
	}
	shown := redact.String(value)
	u, err := url.Parse(value)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "":
		v.add(path, "%q is not an absolute URL such as https://host/path", shown)
	case u.User != nil:
		v.add(path, "%q holds credentials: give them in their own keys", shown)
	case u.Fragment != "" || strings.HasSuffix(value, "#"):
		v.add(path, "%q has a fragment", shown)
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	case u.Scheme == "http":
		v.add(path, "%q is not https: http is for a loopback host (localhost, 127.0.0.1, ::1) only", shown)
	default:
		v.add(path, "%q is not an https URL", shown)
	}
}

// urlPath checks that value is a path below the public URL.
func (v *validation) urlPath(path, value string) {
	if !strings.HasPrefix(value, "/") || strings.ContainsAny(value, "?#") {
		v.add(path, "%q is not a path such as /oauth/proxy/callback", value)
	}
}

// isLoopback: localhost, or a loopback IP address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c MCPClient) validate(v *validation, p string) {
	v.required(p+".publicUrl", c.PublicURL, c.Enabled, p)
	v.url(p+".publicUrl", c.PublicURL)
	v.url(p+".clientId", c.ClientID)
	v.urlPath(p+".callbackPath", c.CallbackPath)
	if c.CallbackPath == DefaultServerCallbackPath {
		v.add(p+".callbackPath", "%s is the server role's callback: give the client role its own (default %s)", DefaultServerCallbackPath, DefaultProxyCallbackPath)
	}
	v.urlPath(p+".cimd.path", c.CIMD.Path)
	for i, prefix := range c.PostLoginRedirectAllowlist {
		at := fmt.Sprintf("%s.postLoginRedirectAllowlist[%d]", p, i)
		u, err := url.Parse(prefix)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			v.add(at, "%q is not an absolute http(s) URL prefix such as https://app.example.com/done", redact.String(prefix))
		}
	}
}

// schemePattern is RFC 3986's scheme.
var schemePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*$`)

func (s Server) validate(v *validation, p string) {
	v.required(p+".baseUrl", s.BaseURL, s.Enabled, p)
	v.url(p+".baseUrl", s.BaseURL)
	v.url(p+".resourceIdentifier", s.ResourceIdentifier)

	switch s.Provider {
	case ProviderDex:
		v.required(p+".dex.issuerUrl", s.Dex.IssuerURL, s.Enabled, p)
		v.required(p+".dex.clientId", s.Dex.ClientID, s.Enabled, p)
	case ProviderGoogle:
		if s.Enabled {
			v.add(p+".provider", "google is not supported by musterd yet: use dex, or leave %s.enabled false", p)
		}
	default:
		v.add(p+".provider", "%q is not a provider: dex or google", s.Provider)
	}
	v.url(p+".dex.issuerUrl", s.Dex.IssuerURL)

	switch s.Storage.Type {
	case StorageMemory:
	case StorageValkey:
		if s.Storage.Valkey.URL == "" {
			v.add(p+".storage.valkey.url", "required when storage.type is valkey")
		}
	default:
		v.add(p+".storage.type", "%q is not a storage type: memory or valkey", s.Storage.Type)
	}
	if strings.Contains(s.Storage.Valkey.URL, "@") {
		// A password in the address would show wherever the address does.
		v.add(p+".storage.valkey.url", "%q holds credentials: give the password in storage.valkey.password or passwordFile", redact.String(s.Storage.Valkey.URL))
	}
	if s.Storage.Valkey.DB < 0 {
		v.add(p+".storage.valkey.db", "%d is not a database number (0 or more)", s.Storage.Valkey.DB)
	}
	if s.Storage.Valkey.TLSServerName != "" && !s.Storage.Valkey.TLSEnabled {
		// Else the name meant for TLS is set and the connection is plain.
		v.add(p+".storage.valkey.tlsServerName", "set without tlsEnabled: true")
	}

	if s.EncryptionKey.IsSet() {
		key, err := base64.StdEncoding.DecodeString(s.EncryptionKey.Reveal())
		switch {
		case err != nil:
			v.add(p+".encryptionKey", "is not base64 (make one with: openssl rand -base64 32)")
		case len(key) != EncryptionKeySize:
			v.add(p+".encryptionKey", "decodes to %d bytes, not %d (make one with: openssl rand -base64 32)", len(key), EncryptionKeySize)
		}
	}
	if s.SessionDuration <= 0 {
		v.add(p+".sessionDuration", "%s is not a positive duration", s.SessionDuration)
	}

	for i, o := range s.AllowedOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			v.add(fmt.Sprintf("%s.allowedOrigins[%d]", p, i), "%q is not an origin such as https://app.example.com", redact.String(o))
		}
	}
	for i, scheme := range s.TrustedPublicRegistrationSchemes {
		at := fmt.Sprintf("%s.trustedPublicRegistrationSchemes[%d]", p, i)
		switch {
		case !schemePattern.MatchString(scheme):
			v.add(at, "%q is not a URI scheme such as cursor", scheme)
		case slices.Contains([]string{"http", "https"}, strings.ToLower(scheme)):
			// Any web page's redirect would register without the token.
			v.add(at, "%s would let any web redirect register: list web redirect URIs in trustedPublicRegistrationRedirectURIs", scheme)
		}
	}
	for i, uri := range s.TrustedPublicRegistrationRedirectURIs {
		v.url(fmt.Sprintf("%s.trustedPublicRegistrationRedirectURIs[%d]", p, i), uri)
	}
	for i, aud := range s.TrustedAudiences {
		if strings.TrimSpace(aud) == "" {
			v.add(fmt.Sprintf("%s.trustedAudiences[%d]", p, i), "is empty")
		}
	}
	for i, ti := range s.TrustedIssuers {
		at := fmt.Sprintf("%s.trustedIssuers[%d]", p, i)
		if ti.Issuer == "" {
			v.add(at+".issuer", "required")
		}
		if ti.JwksURL == "" {
			v.add(at+".jwksUrl", "required")
		}
		v.url(at+".jwksUrl", ti.JwksURL)
	}
	s.TokenExchangeBroker.validate(v, p+".tokenExchangeBroker", s.Enabled && len(s.TrustedIssuers) == 0)
}

func (b TokenExchangeBroker) validate(v *validation, p string, noIssuers bool) {
	if b.Enabled() && noIssuers {
		v.add(p, "has targets but trustedIssuers is empty: subject tokens could not be checked")
	}
	for _, aud := range sortedKeys(b.Targets) {
		t := b.Targets[aud]
		at := p + ".targets." + aud
		if t.DexTokenEndpoint == "" {
			v.add(at+".dexTokenEndpoint", "required")
		}
		v.url(at+".dexTokenEndpoint", t.DexTokenEndpoint)
		if t.ConnectorID == "" {
			v.add(at+".connectorId", "required")
		}
		if r := t.ClientCredentialsSecretRef; r != nil && r.Name == "" {
			v.add(at+".clientCredentialsSecretRef.name", "required")
		}
	}
	for _, id := range sortedKeys(b.BrokerClients) {
		if r := b.BrokerClients[id].ClientCredentialsSecretRef; r != nil && r.Name == "" {
			v.add(p+".brokerClients."+id+".clientCredentialsSecretRef.name", "required")
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
