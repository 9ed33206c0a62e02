package main

// End-to-end tests of the MCP endpoint: the real musterd binary, real MCP
// servers, and the go-sdk client driving /mcp exactly as muster's CLI
// does (protocol 2024-11-05, the meta-tools, call_tool's envelope) and
// /mcp/direct as any MCP client does.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcpClient connects the go-sdk client to the daemon's path at protocol
// version, as muster's CLI connects to `muster serve`.
func (e *fsEnv) mcpClient(t *testing.T, path, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "muster", Version: "e2e"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + e.addr + path}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "connect to %s\n%s", path, e.stderr)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls tool and returns its first text.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, tool)
	require.NotEmpty(t, res.Content, tool)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%s: content %T", tool, res.Content[0])
	return tc.Text, res.IsError
}

// musterCall calls tool through call_tool and unwraps muster's envelope, as
// muster's CLI does: the inner result's first text, and its isError.
func musterCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	outer, outerErr := callTool(t, cs, "call_tool", map[string]any{"name": tool, "arguments": args})
	var env struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type, Text string
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal([]byte(outer), &env), "%s: not an envelope: %s", tool, outer)
	require.Equal(t, env.IsError, outerErr, "the outer isError mirrors the inner")
	require.NotEmpty(t, env.Content)
	return env.Content[0].Text, env.IsError
}

func TestE2EMustersCLIViewOfTheCoreTools(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", append(stdioSpec("-tools", "echo,"+marker), "toolPrefix: fk", `env: {API_TOKEN: "s3cr3t-value"}`)...))
	e.write(t, "workflows/greet.yaml", workflowYAML("greet", "x_fk_echo"))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	// muster's CLI checks liveness with a plain GET, and /health as muster.
	code, body := e.get(t, "/mcp")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = e.get(t, "/health")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, `{"status":"ok"}`, body)

	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	assert.Equal(t, "muster-aggregator", cs.InitializeResult().ServerInfo.Name)
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"call_tool", "describe_prompt", "describe_resource", "describe_tool", "filter_tools", "get_prompt", "get_resource",
		"list_core_tools", "list_prompts", "list_resources", "list_tools"}, names)

	// muster list mcpserver
	out, isErr := musterCall(t, cs, "core_mcpserver_list", nil)
	require.False(t, isErr, out)
	var list struct {
		MCPServers []struct {
			Name, State, ToolPrefix string
			ToolsCount              int
			Env                     map[string]string
		} `json:"mcpServers"`
		Total int
		Mode  string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list.MCPServers, 1, out)
	assert.Equal(t, "fake", list.MCPServers[0].Name)
	assert.Equal(t, "Running", list.MCPServers[0].State)
	assert.Equal(t, 2, list.MCPServers[0].ToolsCount)
	assert.Equal(t, map[string]string{"API_TOKEN": "[redacted]"}, list.MCPServers[0].Env)
	assert.Equal(t, "filesystem", list.Mode)
	assert.NotContains(t, out, "s3cr3t-value")

	// muster check mcpserver / get service
	out, isErr = musterCall(t, cs, "core_service_status", map[string]any{"name": "fake"})
	require.False(t, isErr, out)
	assert.Contains(t, out, `"state":"running"`)
	assert.Contains(t, out, `"health":"healthy"`)

	// muster list workflow / check workflow: the reconciler's verdict.
	eventually(t, "greet is available", func() bool {
		out, _ := musterCall(t, cs, "core_workflow_available", map[string]any{"name": "greet"})
		return out == `{"available":true,"name":"greet"}`
	})
	out, _ = musterCall(t, cs, "core_workflow_list", nil)
	assert.JSONEq(t, `{"workflows":[{"name":"greet","available":true,"description":"e2e"}]}`, out)

	// Beyond muster: the reconcile state.
	out, isErr = musterCall(t, cs, "core_reconcile_status", map[string]any{"kind": "mcpserver", "name": "fake"})
	require.False(t, isErr, out)
	assert.Contains(t, out, `"state":"Synced"`)

	// muster events
	out, isErr = musterCall(t, cs, "core_events", map[string]any{"resourceName": "fake"})
	require.False(t, isErr, out)
	assert.Contains(t, out, `"reason":"ResourceSynced"`)

	// A tool nobody offers: muster's plain error, no envelope.
	out, isErr = callTool(t, cs, "call_tool", map[string]any{"name": "x_nobody_home"})
	assert.True(t, isErr)
	assert.Contains(t, out, `Tool execution failed: unknown tool "x_nobody_home"`)
}
