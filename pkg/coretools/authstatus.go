package coretools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
)

// auth://status, muster's resource of the caller's standing with each
// server (muster's internal/aggregator/auth_resource.go): connected, or
// what it takes to be. A pure read: it logs no one in and connects
// nothing; the issuer it names is the one Logins found (and keeps).

// AuthStatusURI is the resource's URI.
const AuthStatusURI = "auth://status"

var authStatusResource = &mcp.Resource{URI: AuthStatusURI, Name: "auth-status", MIMEType: "application/json",
	Description: "Authentication status for all MCP servers. Provides information about which servers require authentication and their OAuth issuer URLs for SSO detection."}

// The statuses muster's resource gives a server.
const (
	authConnected    = "connected"
	authRequired     = "auth_required"
	authSSOPending   = "sso_pending"
	authDisconnected = "disconnected"
	authFailed       = "failed"
)

// serverAuthStatus is one server's entry, muster's shape.
type serverAuthStatus struct {
	Name                   string `json:"name"`
	Status                 string `json:"status"`
	Issuer                 string `json:"issuer,omitempty"`
	Scope                  string `json:"scope,omitempty"`
	AuthTool               string `json:"auth_tool,omitempty"`
	Error                  string `json:"error,omitempty"`
	TokenForwardingEnabled bool   `json:"token_forwarding_enabled,omitempty"`
	TokenExchangeEnabled   bool   `json:"token_exchange_enabled,omitempty"`
	SSOAttemptFailed       bool   `json:"sso_attempt_failed,omitempty"`
}

// SSOStatus is what Logins may also say of a caller's single sign-on
// servers (forwardToken, tokenExchange).
type SSOStatus interface {
	// SSO says whether owner's connection is being opened, and why its
	// last attempt failed ("" when it did not).
	SSO(owner string, server events.Key) (pending bool, failure string)
	// AwaitSSO returns once owner's connection that is being opened is
	// open or failed (at once when none is), or ctx ends.
	AwaitSSO(ctx context.Context, owner string, server events.Key)
}

// OwnResources are the resources the core tools serve themselves.
func (p *Provider) OwnResources() []*mcp.Resource { return []*mcp.Resource{authStatusResource} }

// ReadOwnResource reads auth://status for ctx's caller: each declared
// server, in name order, as that caller stands with it. Without a caller
// (no session, no user), what the servers' own state says.
func (p *Provider) ReadOwnResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, bool, error) {
	if uri != AuthStatusURI {
		return nil, false, nil
	}
	id, hasCaller := identity.From(ctx)
	var out struct {
		Servers []serverAuthStatus `json:"servers"`
	}
	out.Servers = []serverAuthStatus{}
	for _, e := range p.opts.Index.List(v1alpha1.KindMCPServer) {
		server, ok := e.Object.(*v1alpha1.MCPServer)
		if !ok || server == nil {
			continue
		}
		ls := LoginServer{Key: e.Key, URL: server.Spec.URL, Auth: server.Spec.Auth}
		st, _ := p.mcpServerStatus(e.Key)
		entry := serverAuthStatus{Name: e.Key.Name,
			TokenForwardingEnabled: ls.Auth != nil && ls.Auth.ForwardToken,
			TokenExchangeEnabled:   ls.Auth != nil && ls.Auth.TokenExchange != nil && ls.Auth.TokenExchange.Enabled}
		var ssoPending bool
		if sso, ok := p.opts.Logins.(SSOStatus); ok && hasCaller && usesSSO(ls) {
			var failure string
			ssoPending, failure = sso.SSO(id.Owner(), e.Key)
			entry.SSOAttemptFailed, entry.Error = failure != "", failure
		}
		switch {
		case hasCaller && p.opts.Logins != nil && p.opts.Logins.Connected(id.Owner(), e.Key):
			entry.Status, entry.SSOAttemptFailed, entry.Error = authConnected, false, ""
		case ssoPending:
			entry.Status = authSSOPending
		case st.State == v1alpha1.MCPServerStateAuthRequired:
			entry.Status = authRequired
			if p.opts.Logins != nil && p.opts.Logins.Enabled() {
				entry.Issuer, entry.Scope, _ = p.opts.Logins.Issuer(ctx, ls)
			}
			if !usesSSO(ls) {
				entry.AuthTool = "core_auth_login"
			}
		case st.State == v1alpha1.MCPServerStateConnected || st.State == v1alpha1.MCPServerStateRunning:
			entry.Status = authConnected
		case st.State == v1alpha1.MCPServerStateFailed:
			entry.Status, entry.Error = authFailed, st.LastError
		default:
			entry.Status = authDisconnected
		}
		out.Servers = append(out.Servers, entry)
	}
	slices.SortFunc(out.Servers, func(a, b serverAuthStatus) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.Marshal(out)
	if err != nil {
		return nil, true, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: AuthStatusURI, MIMEType: "application/json", Text: string(data)}}}, true, nil
}
