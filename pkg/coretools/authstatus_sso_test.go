package coretools

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// ssoLogins is logins that also says how each owner's SSO attempts went.
type ssoLogins struct {
	*logins
	pending map[string]bool   // owner|server
	failed  map[string]string // owner|server -> why
}

func (l ssoLogins) SSO(owner string, server events.Key) (bool, string) {
	return l.pending[owner+"|"+server.Name], l.failed[owner+"|"+server.Name]
}

// AwaitSSO ends an attempt under way with a connection, as the wiring's
// background connect would.
func (l ssoLogins) AwaitSSO(_ context.Context, owner string, server events.Key) {
	k := owner + "|" + server.Name
	if l.pending[k] {
		delete(l.pending, k)
		l.connected[k] = true
	}
}

// auth://status says of a caller's SSO server, as muster does, that the
// caller's connection is being opened (sso_pending), or that the last
// attempt failed (sso_attempt_failed) and why; a connected caller's
// earlier failure is not shown, nor one of another caller's, nor one of
// a server that is no SSO server.
func TestAuthStatusSaysHowTheCallersSingleSignOnWent(t *testing.T) {
	l := ssoLogins{
		logins:  &logins{connected: map[string]bool{"session:carol|exchanged": true}, tokens: map[string]bool{}, issuer: "https://idp-b.test"},
		pending: map[string]bool{"session:bob|exchanged": true},
		failed: map[string]string{"session:alice|exchanged": "token exchange at https://idp-b.test/token: the token is issued by \"x\"",
			"session:carol|exchanged": "an earlier failure", "session:alice|guarded": "not an SSO server"},
	}
	p := authProvider(t, l, map[string]v1alpha1.MCPServerState{
		"exchanged": v1alpha1.MCPServerStateAuthRequired, "guarded": v1alpha1.MCPServerStateAuthRequired,
	}, map[string]*v1alpha1.MCPServerAuth{"exchanged": {TokenExchange: &v1alpha1.TokenExchangeConfig{Enabled: true,
		DexTokenEndpoint: "https://idp-b.test/token", ConnectorID: "a"}}})
	read := func(ctx context.Context) string {
		res, ok, err := p.ReadOwnResource(ctx, AuthStatusURI)
		require.NoError(t, err)
		require.True(t, ok)
		return res.Contents[0].Text
	}
	guarded := `{"name":"guarded","status":"auth_required","issuer":"https://idp-b.test","scope":"mcp:read","auth_tool":"core_auth_login"}`
	assert.JSONEq(t, `{"servers":[
		{"name":"exchanged","status":"auth_required","issuer":"https://idp-b.test","scope":"mcp:read","token_exchange_enabled":true,
		 "sso_attempt_failed":true,"error":"token exchange at https://idp-b.test/token: the token is issued by \"x\""},`+guarded+`]}`, read(as("alice")))
	assert.JSONEq(t, `{"servers":[{"name":"exchanged","status":"sso_pending","token_exchange_enabled":true},`+guarded+`]}`, read(as("bob")))
	assert.JSONEq(t, `{"servers":[{"name":"exchanged","status":"connected","token_exchange_enabled":true},`+guarded+`]}`, read(as("carol")))
	assert.JSONEq(t, `{"servers":[{"name":"exchanged","status":"auth_required","issuer":"https://idp-b.test","scope":"mcp:read","token_exchange_enabled":true},`+guarded+`]}`, read(as("dave")))
}

// core_auth_login waits for the caller's SSO connection under way, and
// then finds it open; with none under way, an SSO server is refused with
// muster's text.
func TestCoreAuthLoginWaitsForTheCallersSSOConnectionUnderWay(t *testing.T) {
	l := ssoLogins{logins: &logins{connected: map[string]bool{}, tokens: map[string]bool{}, issuer: "https://idp-b.test"},
		pending: map[string]bool{"session:alice|exchanged": true}}
	p := authProvider(t, l, map[string]v1alpha1.MCPServerState{"exchanged": v1alpha1.MCPServerStateAuthRequired},
		map[string]*v1alpha1.MCPServerAuth{"exchanged": {TokenExchange: &v1alpha1.TokenExchangeConfig{Enabled: true,
			DexTokenEndpoint: "https://idp-b.test/token", ConnectorID: "a"}}})
	out, isErr, _ := call(t, p, as("alice"), "core_auth_login", map[string]any{"server": "exchanged"})
	assert.False(t, isErr)
	assert.Equal(t, "Server 'exchanged' is already authenticated.", out)
	out, isErr, _ = call(t, p, as("bob"), "core_auth_login", map[string]any{"server": "exchanged"})
	assert.True(t, isErr)
	assert.Contains(t, out, "Server 'exchanged' uses SSO and is connected automatically.")
}
