package coretools

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/tooldef"
)

// core_auth_login and core_auth_logout: a user's own login to a protected
// server (one that answered 401: Auth Required), as muster's
// internal/aggregator/auth_tools.go answers them. What a server is and in
// what state comes from the index and its status; the tokens, the login
// URL and the user's own connection come from Logins.

// Logins is musterd's side of the users' logins to protected servers. The
// wiring implements it over the users' tokens (package oauth/client) and
// their own connections to the servers (the supervisor's).
type Logins interface {
	// Enabled says whether musterd logs users in to protected servers
	// (muster's aggregator.oauth.mcpClient.enabled).
	Enabled() bool
	// Connected says whether owner has a connection of its own to the
	// server.
	Connected(owner string, server events.Key) bool
	// Issuer finds the server's authorization server (RFC 9728, or the
	// spec's authorizationServer) and the scope it asks for; "" when it
	// has none that can be found.
	Issuer(ctx context.Context, server LoginServer) (issuer, scope string, err error)
	// Connect connects owner to the server with the token it holds for
	// issuer, and says what the server offers. ErrNoToken: owner holds
	// none. ErrTokenRefused: the server refused it, and it is dropped.
	Connect(ctx context.Context, owner string, server LoginServer, issuer string) (Offered, error)
	// Begin starts owner's login to the server at issuer, and returns
	// the URL the user opens.
	Begin(ctx context.Context, owner string, server LoginServer, issuer, scope string) (authURL string, err error)
	// Logout ends owner's connection to the server, and drops owner's
	// token for its issuer unless another server uses that issuer.
	Logout(ctx context.Context, owner string, server LoginServer) error
}

// LoginServer is a protected server, as Logins needs it.
type LoginServer struct {
	Key events.Key
	URL string
	// Auth is the spec's auth section, if any (its authorizationServer
	// names the issuer when the server publishes none).
	Auth *v1alpha1.MCPServerAuth
}

// Offered is what a server offers a user who connected.
type Offered struct{ Tools, Resources, Prompts int }

var (
	// ErrNoToken says the user holds no token for the issuer.
	ErrNoToken = errors.New("no token held for the issuer")
	// ErrTokenRefused says the server refused the user's token (401).
	ErrTokenRefused = errors.New("the server refused the token")
)

// missingSession is muster's answer to a login tool called outside any
// session.
const missingSession = "Error: authentication context missing — no active session"

func (p *Provider) authTools() []*tooldef.Tool {
	server := func(what string) []tooldef.Arg {
		return []tooldef.Arg{{Name: "server", Type: tooldef.String, Required: true, Description: "Name of the MCP server to " + what}}
	}
	return []*tooldef.Tool{
		{Name: "core_auth_login", Description: "Authenticate to an OAuth-protected MCP server", Args: server("authenticate to"),
			Call: selfChecked(p.authLogin), SelfChecked: true},
		{Name: "core_auth_logout", Description: "Log out from an OAuth-protected MCP server", Args: server("log out from"),
			Call: selfChecked(p.authLogout), SelfChecked: true},
	}
}

// loginTarget reads a login tool's server argument and its caller:
// muster's errors when either is missing, in muster's order.
func loginTarget(ctx context.Context, m map[string]any) (server, owner string, refusal *mcp.CallToolResult) {
	server, _ = m["server"].(string)
	if server == "" {
		return "", "", fail("Error: 'server' argument is required and must be a string")
	}
	id, ok := identity.From(ctx)
	if !ok {
		return "", "", fail(missingSession)
	}
	return server, id.Owner(), nil
}

// loginServer finds the declared MCPServer name and its status.
func (p *Provider) loginServer(name string) (LoginServer, v1alpha1.MCPServerStatus, bool) {
	e, err := p.find(v1alpha1.KindMCPServer, name)
	if err != nil {
		return LoginServer{}, v1alpha1.MCPServerStatus{}, false
	}
	s := LoginServer{Key: e.Key}
	if server, ok := e.Object.(*v1alpha1.MCPServer); ok && server != nil {
		s.URL, s.Auth = server.Spec.URL, server.Spec.Auth
	}
	st, _ := p.mcpServerStatus(e.Key)
	return s, st, true
}

// usesSSO says whether the server is connected for each user at the start
// of the user's session (its token forwarded or exchanged), with no login
// of its own.
func usesSSO(s LoginServer) bool {
	return s.Auth != nil && (s.Auth.ForwardToken || s.Auth.TokenExchange != nil && s.Auth.TokenExchange.Enabled)
}

func (p *Provider) authLogin(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	name, owner, refusal := loginTarget(ctx, m)
	if refusal != nil {
		return refusal
	}
	s, st, found := p.loginServer(name)
	if !found {
		return fail(fmt.Sprintf("Server '%s' not found. Use list_tools to see available servers.", name))
	}
	logins := p.opts.Logins
	if st.State != v1alpha1.MCPServerStateAuthRequired {
		if st.State == v1alpha1.MCPServerStateConnected || st.State == v1alpha1.MCPServerStateRunning {
			return text(fmt.Sprintf("Server '%s' is already authenticated and connected.", name))
		}
		return text(fmt.Sprintf("Server '%s' does not require authentication.", name))
	}
	if sso, ok := logins.(SSOStatus); ok && usesSSO(s) {
		// A session's SSO connections open as it starts; one still
		// opening is waited for, as muster's are before the session's
		// first answer.
		sso.AwaitSSO(ctx, owner, s.Key)
	}
	if logins != nil && logins.Connected(owner, s.Key) {
		return text(fmt.Sprintf("Server '%s' is already authenticated.", name))
	}
	if logins == nil || !logins.Enabled() {
		return fail(fmt.Sprintf("OAuth is not configured. Server '%s' requires authentication but OAuth proxy is not enabled. "+
			"Enable OAuth proxy in the configuration to authenticate to remote MCP servers.", name))
	}
	if usesSSO(s) {
		return fail(fmt.Sprintf("Server '%s' uses SSO and is connected automatically.\n\n"+
			"Manual login via core_auth_login is not supported for SSO servers.\n"+
			"SSO connections are established when your session starts. "+
			"If the server is not connected, check your SSO configuration or re-authenticate to muster.", name))
	}
	issuer, scope, err := logins.Issuer(ctx, s)
	if err != nil {
		p.log.Warn("discovering a protected server's authorization server failed", "key", s.Key.String(), "error", err)
	}
	if issuer == "" {
		return fail(fmt.Sprintf("Cannot authenticate to '%s': RFC 9728 protected resource metadata not found. "+
			"On the MCPServer set spec.auth.type=oauth and spec.auth.authorizationServer.issuer "+
			"to pin the OAuth issuer URL (e.g. https://cf.mcp.atlassian.com for Atlassian's hosted MCP). "+
			"See docs/how-to/connecting-non-rfc9728-mcp-servers.md.", name))
	}
	// One login covers every server of an issuer: a token held for it is
	// tried first.
	offered, err := logins.Connect(ctx, owner, s, issuer)
	switch {
	case err == nil:
		return text(fmt.Sprintf("Successfully connected to '%s'!\n\n"+
			"Available capabilities:\n- Tools: %d\n- Resources: %d\n- Prompts: %d\n\n"+
			"You can now use the tools from this server.", name, offered.Tools, offered.Resources, offered.Prompts))
	case errors.Is(err, ErrNoToken), errors.Is(err, ErrTokenRefused):
	default:
		return fail(fmt.Sprintf("Failed to connect to '%s': %v\n\nPlease try again or check the server status.", name, err))
	}
	authURL, err := logins.Begin(ctx, owner, s, issuer, scope)
	if err != nil {
		return fail(fmt.Sprintf("Failed to create authentication challenge: %v", err))
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Authentication Required\n\n"+
			"Server: %s\n"+
			"Status: Authentication required for %s. Please visit the link below to authenticate.\n\n"+
			"Please sign in to connect to this server:\n\n"+
			"%s\n\n"+
			"After signing in, run this tool again to complete the connection.", name, name, authURL)}},
		StructuredContent: map[string]any{"authUrl": authURL},
	}
}

func (p *Provider) authLogout(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	name, owner, refusal := loginTarget(ctx, m)
	if refusal != nil {
		return refusal
	}
	s, _, found := p.loginServer(name)
	if !found {
		return fail(fmt.Sprintf("Server '%s' not found.", name))
	}
	if usesSSO(s) {
		return fail(fmt.Sprintf("Server '%s' uses SSO and is managed automatically.\n\n"+
			"Manual logout via core_auth_logout is not supported for SSO servers.\n"+
			"To disconnect, re-authenticate to muster or contact your administrator.", name))
	}
	if logins := p.opts.Logins; logins != nil {
		if err := logins.Logout(ctx, owner, s); err != nil {
			return fail(fmt.Sprintf("Failed to log out from '%s': %v", name, err))
		}
	}
	return text(fmt.Sprintf("Successfully logged out from '%s'.\n\n"+
		"The server's tools are now hidden. Use core_auth_login with server='%s' to re-authenticate.", name, name))
}
