package main

// End to end: resource subscriptions through the view of one server,
// /mcp/servers/<name>, to npm's server-everything.

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
)

// A server's view offers subscriptions as its server does and passes them
// through under the server's own URIs: the server's
// notifications/resources/updated reach the view's session, and again
// once the server restarted (musterd subscribes its new process).
func TestE2EAServersViewPassesResourceSubscriptionsThrough(t *testing.T) {
	everything := npmtest.ServerEverything(t)
	e := startFS(t)
	e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true", "command: "+yamlValue(everything), `args: ["stdio"]`, "timeout: 60"))
	e.waitServer(t, "everything", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	updated := make(chan string, 64)
	cs := e.mcpClient(t, "/mcp/servers/everything", "2025-06-18", &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
	})
	caps := cs.InitializeResult().Capabilities
	require.NotNil(t, caps.Resources)
	assert.True(t, caps.Resources.Subscribe, "the server's own capability")

	var uri string
	eventually(t, "server-everything's resources are listed", func() bool {
		for r, err := range cs.Resources(context.Background(), nil) {
			require.NoError(t, err)
			uri = r.URI
			return true
		}
		return false
	})
	require.NoError(t, cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
	// server-everything sends updates of the resources subscribed to once
	// this tool is toggled on, at once and every 5 s.
	direct := e.mcpClient(t, "/mcp/direct", "2025-06-18", nil)
	waitUpdate := func(when string) {
		t.Helper()
		eventually(t, "the toggle is called", func() bool {
			res, err := direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_everything_toggle-subscriber-updates", Arguments: map[string]any{}})
			if err != nil {
				require.Contains(t, err.Error(), "unknown tool")
				return false
			}
			require.False(t, res.IsError)
			return true
		})
		select {
		case got := <-updated:
			assert.Equal(t, uri, got, "the update names the server's own URI")
		case <-time.After(e2eDeadline):
			t.Fatalf("no notifications/resources/updated for %s %s within %s\n%s", uri, when, e2eDeadline, e.stderr)
		}
	}
	waitUpdate("after subscribing")

	out, isErr := callTool(t, direct, "core_service_restart", map[string]any{"name": "everything"})
	require.False(t, isErr, out)
	for len(updated) > 0 { // updates the old process sent
		<-updated
	}
	waitUpdate("after the server restarted")
	require.NoError(t, cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
}
