package router_test

import (
	"time"

	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/supervisor"
)

// TestAGoneServersToolSaysWhetherItWasStoppedOrDeleted: the call reaches
// the server's key; what the supervisor answers of a server it forgot is
// told as stopped, or as deleted when it is no longer declared.
func TestAGoneServersToolSaysWhetherItWasStoppedOrDeleted(t *testing.T) {
	cat := catalogue.New(catalogue.Options{})
	f := &fakeServers{}
	declared := map[string]bool{"kept": true}
	r, err := router.New(router.Options{Catalogue: cat, Servers: f,
		Declared: func(k events.Key) bool { return declared[k.Name] }})
	require.NoError(t, err)
	for _, name := range []string{"kept", "gone"} {
		cat.Update(key(name), catalogue.Naming{}, []*mcp.Tool{{Name: "echo"}}, time.Time{})
		cat.Remove(key(name))
	}
	assert.True(t, r.Claims("x_kept_echo"))

	f.err = &supervisor.ServerError{Key: key("kept"), Err: supervisor.ErrNotRunning}
	_, err = r.CallTool(t.Context(), "x_kept_echo", map[string]any{"a": 1}, nil)
	require.ErrorIs(t, err, supervisor.ErrNotRunning)
	assert.EqualError(t, err, "server not found: kept: tool \"x_kept_echo\": mcp server MCPServer/default/kept is not running (state Stopped)")

	f.err = &supervisor.ServerError{Key: key("gone"), Err: supervisor.ErrNotRunning}
	_, err = r.CallTool(t.Context(), "x_gone_echo", nil, nil)
	require.ErrorIs(t, err, supervisor.ErrNotRunning)
	assert.EqualError(t, err, "server not found: gone: tool \"x_gone_echo\": mcp server MCPServer/default/gone is not running: its definition is deleted")

	f.err = &supervisor.ServerError{Key: key("kept"), State: "Failed", Err: supervisor.ErrNotRunning, Detail: "last error: boom"}
	_, err = r.CallTool(t.Context(), "x_kept_echo", nil, nil)
	assert.EqualError(t, err, "server not found: kept: tool \"x_kept_echo\": mcp server MCPServer/default/kept is not running (state Failed): last error: boom",
		"a state the supervisor knows is its own")

	f.err, f.result = nil, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "back"}}}
	res, err := r.CallTool(t.Context(), "x_kept_echo", nil, nil)
	require.NoError(t, err, "a server started again meanwhile answers")
	assert.Equal(t, "back", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, []string{`kept echo {"a":1}`, `gone echo {}`, `kept echo {}`, `kept echo {}`}, f.calls, "by the server's own name")
}
