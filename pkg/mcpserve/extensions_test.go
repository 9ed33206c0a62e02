package mcpserve

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// A server's view offers the extensions the server offers (MCP Apps' UI,
// say), in both generations: in initialize's result to a client of
// 2025-11-25, and in server/discover's to one of 2026-07-28.
func TestAServersViewOffersItsServersExtensions(t *testing.T) {
	const ui = "io.modelcontextprotocol/ui"
	key := events.NewKey("MCPServer", "default", "apps")
	init := initResult("apps-server", "")
	init.Capabilities.AddExtension(ui, map[string]any{"version": "2026-01-26"})
	b := &viewBackend{fakeBackend: &fakeBackend{call: echo}}
	b.set(router.ServerOffer{Key: key, Init: init, Tools: []*mcp.Tool{echoTool("show")}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	for _, version := range []string{"2025-11-25", newestProtocol} {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + PathServers + "apps"},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		got := cs.InitializeResult()
		assert.Equal(t, version, got.ProtocolVersion)
		require.NotNil(t, got.Capabilities, version)
		assert.Equal(t, map[string]any{"version": "2026-01-26"}, got.Capabilities.Extensions[ui], version)
		require.NoError(t, cs.Close())
	}
}
