package supervisor_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/supervisor"
)

// uiExtension is MCP Apps' extension, as a client negotiates it.
const uiExtension = "io.modelcontextprotocol/ui"

// withUI is a client that offers elicitation and MCP Apps' UI.
func withUI() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	caps.AddExtension(uiExtension, map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}})
	return caps
}

// serverSees is the client capabilities the server saw for a call.
func serverSees(t *testing.T, text string) *mcp.ClientCapabilities {
	t.Helper()
	var caps mcp.ClientCapabilities
	require.NoError(t, json.Unmarshal([]byte(text), &caps), text)
	return &caps
}

// The extensions a client negotiates reach its server, never stripped: on
// a client's own session with the server (its initialize), and in a
// relaying call's _meta to a server of 2026-07-28.
func TestAClientsExtensionsReachItsServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("older"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("older"), fake("-tools", "client_caps", "-protocols", olderGeneration))
	h.ensure(t, key("newer"), fake("-tools", "client_caps"))

	text, err := callText(t, h.sup, peer.With(callCtx(t), newFakePeer("apps", withUI())), "older", "client_caps", nil)
	require.NoError(t, err)
	assert.Contains(t, serverSees(t, text).Extensions, uiExtension, "the lane's initialize offers it: %s", text)

	text, err = callText(t, h.sup, peer.WithRelay(callCtx(t), withUI()), "newer", "client_caps", nil)
	require.NoError(t, err)
	assert.Contains(t, serverSees(t, text).Extensions, uiExtension, "the relaying call's _meta carries it: %s", text)

	text, err = callText(t, h.sup, callCtx(t), "newer", "client_caps", nil)
	require.NoError(t, err)
	assert.NotContains(t, serverSees(t, text).Extensions, uiExtension, "a call of nobody's offers none")
}
