package coretools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/identity"
)

// callAs calls a tool as who.
func (h *harness) callAs(t *testing.T, who identity.Identity, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := h.p.CallTool(identity.With(context.Background(), who), name, args, nil)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// core_mcpserver_create stamps who created the server, the caller's
// subject, in ui.giantswarm.io/registered-by, whatever the caller says;
// core_mcpserver_get and _list show it as registeredBy, and an update (by
// anyone) keeps it. Without a user (the static token, a session alone)
// nothing is stamped, as muster stamps nothing without one.
func TestCreateStampsTheCallersSubject(t *testing.T) {
	h := newHarness(t)
	alice := identity.Identity{Subject: "alice-sub", Issuer: "https://idp.test", Session: "s1"}
	bob := identity.Identity{Subject: "bob-sub", Issuer: "https://idp.test", Session: "s2"}

	msg, isErr := h.callAs(t, alice, "core_mcpserver_create", map[string]any{"name": "stamped", "type": "stdio", "command": "echo", "args": []any{"stamped"}})
	require.False(t, isErr, msg)
	data, err := os.ReadFile(filepath.Join(h.dir, "mcpservers", "stamped.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "ui.giantswarm.io/registered-by: alice-sub")

	registeredBy := func(tool string) string {
		out, isErr := h.call(t, tool, map[string]any{"name": "stamped"})
		require.False(t, isErr, out)
		var info struct {
			RegisteredBy string `json:"registeredBy"`
			MCPServers   []struct {
				Name         string `json:"name"`
				RegisteredBy string `json:"registeredBy"`
			} `json:"mcpServers"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &info), out)
		for _, s := range info.MCPServers {
			if s.Name == "stamped" {
				return s.RegisteredBy
			}
		}
		return info.RegisteredBy
	}
	assert.Equal(t, "alice-sub", registeredBy("core_mcpserver_get"))
	assert.Equal(t, "alice-sub", registeredBy("core_mcpserver_list"))

	msg, isErr = h.callAs(t, bob, "core_mcpserver_update", map[string]any{"name": "stamped", "description": "updated description"})
	require.False(t, isErr, msg)
	assert.Equal(t, "alice-sub", registeredBy("core_mcpserver_get"), "an update keeps who registered it")

	msg, isErr = h.callAs(t, identity.Identity{Session: "s3"}, "core_mcpserver_create", map[string]any{"name": "anonymous", "type": "stdio", "command": "echo"})
	require.False(t, isErr, msg)
	out, _ := h.call(t, "core_mcpserver_get", map[string]any{"name": "anonymous"})
	assert.NotContains(t, out, "registeredBy")
	data, err = os.ReadFile(filepath.Join(h.dir, "mcpservers", "anonymous.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "registered-by")

	msg, isErr = h.callAs(t, alice, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{map[string]any{"id": "a", "tool": "x_git_status"}}})
	require.False(t, isErr, msg)
	data, err = os.ReadFile(filepath.Join(h.dir, "workflows", "flow.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "registered-by", "muster stamps MCP servers alone")
}
