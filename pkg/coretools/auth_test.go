package coretools

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/resources"
)

// logins is a Logins the test sets: which owners are connected, which
// hold a token, what the server offers; it records what it was asked.
type logins struct {
	disabled   bool
	connected  map[string]bool // owner, or owner|server
	tokens     map[string]bool // owner|issuer
	issuer     string
	connectErr error
	begun      []string // owner|server|issuer|scope
	loggedOut  []string // owner|server
}

func (l *logins) Enabled() bool { return !l.disabled }
func (l *logins) Connected(owner string, server events.Key) bool {
	return l.connected[owner] || l.connected[owner+"|"+server.Name]
}
func (l *logins) Issuer(context.Context, LoginServer) (string, string, error) {
	if l.issuer == "" {
		return "", "", errors.New("no metadata")
	}
	return l.issuer, "mcp:read", nil
}
func (l *logins) Connect(_ context.Context, owner string, _ LoginServer, issuer string) (Offered, error) {
	switch {
	case l.connectErr != nil:
		return Offered{}, l.connectErr
	case !l.tokens[owner+"|"+issuer]:
		return Offered{}, ErrNoToken
	}
	l.connected[owner] = true
	return Offered{Tools: 3, Resources: 1}, nil
}
func (l *logins) Begin(_ context.Context, owner string, s LoginServer, issuer, scope string) (string, error) {
	l.begun = append(l.begun, owner+"|"+s.Key.Name+"|"+issuer+"|"+scope)
	return "http://musterd.test/oauth/proxy/start?state=abc", nil
}
func (l *logins) Logout(_ context.Context, owner string, s LoginServer) error {
	l.loggedOut = append(l.loggedOut, owner+"|"+s.Key.Name)
	return nil
}

// authProvider serves the login tools over servers declared with states.
func authProvider(t *testing.T, l Logins, servers map[string]v1alpha1.MCPServerState, auth map[string]*v1alpha1.MCPServerAuth) *Provider {
	t.Helper()
	ix := resources.New()
	states := map[events.Key]v1alpha1.MCPServerStatus{}
	for name, state := range servers {
		k := events.NewKey(v1alpha1.KindMCPServer, events.DefaultNamespace, name)
		server := &v1alpha1.MCPServer{Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStreamableHTTP, URL: "http://" + name + ".test/mcp", Auth: auth[name]}}
		server.Name = name
		ix.SetFile(name+".yaml", []resources.Doc{{Key: k, Object: server, Hash: name}}, nil, k)
		states[k] = v1alpha1.MCPServerStatus{State: state}
	}
	p, err := New(Options{Index: ix, Statuses: &statuses{}, Logins: l, ResourceStatus: func(k events.Key) (any, bool) {
		st, ok := states[k.Canonical()]
		return st, ok
	}})
	require.NoError(t, err)
	return p
}

func as(owner string) context.Context {
	return identity.With(context.Background(), identity.Identity{Session: owner})
}

func call(t *testing.T, p *Provider, ctx context.Context, tool string, args map[string]any) (string, bool, *mcp.CallToolResult) {
	t.Helper()
	res, err := p.CallTool(ctx, tool, args, nil)
	require.NoError(t, err)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError, res
}

// core_auth_login answers as muster's does, in muster's order: the
// argument, the session, the server, its state, the user's own
// connection, the proxy, SSO, discovery, a token held, and then a login.
func TestCoreAuthLoginAnswersAsMusters(t *testing.T) {
	const issuer = "https://idp.test"
	l := &logins{connected: map[string]bool{"session:bob": true}, tokens: map[string]bool{"session:carol|" + issuer: true}, issuer: issuer}
	p := authProvider(t, l, map[string]v1alpha1.MCPServerState{
		"open": v1alpha1.MCPServerStateConnected, "off": v1alpha1.MCPServerStateStopped,
		"guarded": v1alpha1.MCPServerStateAuthRequired, "sso": v1alpha1.MCPServerStateAuthRequired,
	}, map[string]*v1alpha1.MCPServerAuth{"sso": {ForwardToken: true}})
	alice := as("alice")

	for _, c := range []struct {
		ctx     context.Context
		server  any
		want    string
		isError bool
	}{
		{alice, nil, "Error: 'server' argument is required and must be a string", true},
		{context.Background(), "guarded", missingSession, true},
		{alice, "nowhere", "Server 'nowhere' not found. Use list_tools to see available servers.", true},
		{alice, "open", "Server 'open' is already authenticated and connected.", false},
		{alice, "off", "Server 'off' does not require authentication.", false},
		{as("bob"), "guarded", "Server 'guarded' is already authenticated.", false},
		{alice, "sso", "Server 'sso' uses SSO and is connected automatically.\n\nManual login via core_auth_login is not supported for SSO servers.\n" +
			"SSO connections are established when your session starts. If the server is not connected, check your SSO configuration or re-authenticate to muster.", true},
		{as("carol"), "guarded", "Successfully connected to 'guarded'!\n\nAvailable capabilities:\n- Tools: 3\n- Resources: 1\n- Prompts: 0\n\nYou can now use the tools from this server.", false},
	} {
		args := map[string]any{}
		if c.server != nil {
			args["server"] = c.server
		}
		got, isError, _ := call(t, p, c.ctx, "core_auth_login", args)
		assert.Equal(t, c.want, got, "%v", c.server)
		assert.Equal(t, c.isError, isError, "%v", c.server)
	}
	assert.True(t, l.connected["session:carol"], "carol's token for the issuer connected her")
	assert.Empty(t, l.begun, "nobody was sent to log in yet")

	got, isError, res := call(t, p, alice, "core_auth_login", map[string]any{"server": "guarded"})
	assert.False(t, isError, got)
	assert.Equal(t, "Authentication Required\n\nServer: guarded\nStatus: Authentication required for guarded. Please visit the link below to authenticate.\n\n"+
		"Please sign in to connect to this server:\n\nhttp://musterd.test/oauth/proxy/start?state=abc\n\nAfter signing in, run this tool again to complete the connection.", got)
	assert.Equal(t, map[string]any{"authUrl": "http://musterd.test/oauth/proxy/start?state=abc"}, res.StructuredContent)
	assert.Equal(t, []string{"session:alice|guarded|" + issuer + "|mcp:read"}, l.begun, "alice's own login, at the server's issuer")

	l.connectErr = errors.New("connection refused")
	got, isError, _ = call(t, p, alice, "core_auth_login", map[string]any{"server": "guarded"})
	assert.True(t, isError)
	assert.Equal(t, "Failed to connect to 'guarded': connection refused\n\nPlease try again or check the server status.", got)

	l.connectErr, l.issuer = nil, ""
	got, isError, _ = call(t, p, alice, "core_auth_login", map[string]any{"server": "guarded"})
	assert.True(t, isError)
	assert.Contains(t, got, "Cannot authenticate to 'guarded': RFC 9728 protected resource metadata not found.")

	l.disabled = true
	got, isError, _ = call(t, p, alice, "core_auth_login", map[string]any{"server": "guarded"})
	assert.True(t, isError)
	assert.Equal(t, "OAuth is not configured. Server 'guarded' requires authentication but OAuth proxy is not enabled. "+
		"Enable OAuth proxy in the configuration to authenticate to remote MCP servers.", got)
}

// Without Logins, musterd answers as muster without its OAuth proxy.
func TestCoreAuthLoginWithoutLogins(t *testing.T) {
	p := authProvider(t, nil, map[string]v1alpha1.MCPServerState{"guarded": v1alpha1.MCPServerStateAuthRequired}, nil)
	got, isError, _ := call(t, p, as("alice"), "core_auth_login", map[string]any{"server": "guarded"})
	assert.True(t, isError)
	assert.Contains(t, got, "OAuth is not configured. Server 'guarded' requires authentication")
}

// core_auth_logout: muster's texts; the caller's own logout, never
// another's; none for an SSO server.
func TestCoreAuthLogoutAnswersAsMusters(t *testing.T) {
	l := &logins{connected: map[string]bool{}, tokens: map[string]bool{}}
	p := authProvider(t, l, map[string]v1alpha1.MCPServerState{"guarded": v1alpha1.MCPServerStateAuthRequired, "sso": v1alpha1.MCPServerStateConnected},
		map[string]*v1alpha1.MCPServerAuth{"sso": {TokenExchange: &v1alpha1.TokenExchangeConfig{Enabled: true}}})
	got, isError, _ := call(t, p, as("alice"), "core_auth_logout", map[string]any{"server": "nowhere"})
	assert.True(t, isError)
	assert.Equal(t, "Server 'nowhere' not found.", got)
	got, isError, _ = call(t, p, as("alice"), "core_auth_logout", map[string]any{"server": "sso"})
	assert.True(t, isError)
	assert.Equal(t, "Server 'sso' uses SSO and is managed automatically.\n\nManual logout via core_auth_logout is not supported for SSO servers.\n"+
		"To disconnect, re-authenticate to muster or contact your administrator.", got)
	got, isError, _ = call(t, p, as("alice"), "core_auth_logout", map[string]any{"server": "guarded"})
	assert.False(t, isError)
	assert.Equal(t, "Successfully logged out from 'guarded'.\n\nThe server's tools are now hidden. Use core_auth_login with server='guarded' to re-authenticate.", got)
	assert.Equal(t, []string{"session:alice|guarded"}, l.loggedOut)
	got, _, _ = call(t, p, context.Background(), "core_auth_logout", map[string]any{"server": "guarded"})
	assert.Equal(t, missingSession, got)
}

// auth://status says, per declared server in name order, how the caller
// stands with it: connected (its own connection, or a server that needs
// none), auth_required with the issuer and the login tool (none for an
// SSO server), failed with why, disconnected. It is the caller's: alice
// connected is not bob connected.
func TestAuthStatusIsTheCallersStandingWithEachServer(t *testing.T) {
	l := &logins{connected: map[string]bool{"session:alice|guarded": true}, tokens: map[string]bool{}, issuer: "https://idp.test"}
	p := authProvider(t, l, map[string]v1alpha1.MCPServerState{
		"open": v1alpha1.MCPServerStateConnected, "guarded": v1alpha1.MCPServerStateAuthRequired,
		"sso": v1alpha1.MCPServerStateAuthRequired, "off": v1alpha1.MCPServerStateStopped,
	}, map[string]*v1alpha1.MCPServerAuth{"sso": {ForwardToken: true}})
	read := func(ctx context.Context) string {
		res, ok, err := p.ReadOwnResource(ctx, AuthStatusURI)
		require.NoError(t, err)
		require.True(t, ok)
		require.Len(t, res.Contents, 1)
		assert.Equal(t, "application/json", res.Contents[0].MIMEType)
		return res.Contents[0].Text
	}
	assert.JSONEq(t, `{"servers":[
		{"name":"guarded","status":"connected"},
		{"name":"off","status":"disconnected"},
		{"name":"open","status":"connected"},
		{"name":"sso","status":"auth_required","issuer":"https://idp.test","scope":"mcp:read","token_forwarding_enabled":true}]}`, read(as("alice")))
	assert.JSONEq(t, `{"servers":[
		{"name":"guarded","status":"auth_required","issuer":"https://idp.test","scope":"mcp:read","auth_tool":"core_auth_login"},
		{"name":"off","status":"disconnected"},
		{"name":"open","status":"connected"},
		{"name":"sso","status":"auth_required","issuer":"https://idp.test","scope":"mcp:read","token_forwarding_enabled":true}]}`, read(as("bob")))
	assert.Equal(t, read(context.Background()), read(as("bob")), "without a caller: what the servers' own states say")
	_, ok, _ := p.ReadOwnResource(as("bob"), "auth://other")
	assert.False(t, ok)
	assert.Equal(t, []*mcp.Resource{authStatusResource}, p.OwnResources())
}
