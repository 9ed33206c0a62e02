package main

// End-to-end tests of the MCP endpoint: the real musterd binary, real MCP
// servers, and the go-sdk client driving /mcp exactly as muster's CLI
// does (protocol 2024-11-05, the meta-tools, call_tool's envelope) and
// /mcp/direct as any MCP client does.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/internal/npmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	names := toolNames(t, cs)
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
	assert.Contains(t, out, `"reason":"MCPServerStarted"`)

	// A tool nobody offers: muster's plain error, no envelope.
	out, isErr = callTool(t, cs, "call_tool", map[string]any{"name": "x_nobody_home"})
	assert.True(t, isErr)
	assert.Contains(t, out, `Tool execution failed: unknown tool "x_nobody_home"`)
}

func TestE2EMustersCLIViewCallsRealServers(t *testing.T) {
	everything := npmtest.ServerEverything(t)
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", append(stdioSpec("-tools", "echo,"+marker, "-slow-tool", "slow"), "toolPrefix: fk")...))
	e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true", "command: "+yamlValue(everything), `args: ["stdio"]`, "timeout: 60"))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	e.waitServer(t, "everything", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	// muster list tool
	var listed struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	eventually(t, "list_tools shows both servers' tools", func() bool {
		out, _ := callTool(t, cs, "list_tools", nil)
		require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
		names := map[string]bool{}
		for _, tool := range listed.Tools {
			names[tool.Name] = true
		}
		return names["x_fk_echo"] && names["x_fk_"+marker] && names["x_everything_get-sum"] && names["core_mcpserver_list"]
	})

	// muster get tool
	out, isErr := callTool(t, cs, "describe_tool", map[string]any{"name": "x_everything_get-sum"})
	require.False(t, isErr, out)
	assert.Contains(t, out, `"inputSchema"`)
	assert.Contains(t, out, `"a"`)

	// muster call T k=v
	out, isErr = musterCall(t, cs, "x_fk_echo", map[string]any{"message": "hi"})
	require.False(t, isErr, out)
	assert.Equal(t, `echo {"message":"hi"}`, out)
	out, isErr = musterCall(t, cs, "x_everything_get-sum", map[string]any{"a": 2, "b": 3})
	require.False(t, isErr, out)
	assert.Contains(t, out, "5")

	// structuredContent is mirrored outside and kept inside the envelope.
	res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
		"name": "x_fk_slow", "arguments": map[string]any{"steps": 2, "interval": "10ms"}}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Equal(t, 2.0, res.StructuredContent.(map[string]any)["steps"])
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"structuredContent":{`)

	// The servers' resources and prompts through the meta-tools.
	out, isErr = callTool(t, cs, "list_resources", nil)
	require.False(t, isErr, out)
	var resources []struct{ URI, Name string }
	require.NoError(t, json.Unmarshal([]byte(out), &resources), out)
	require.NotEmpty(t, resources)
	out, isErr = callTool(t, cs, "get_resource", map[string]any{"uri": resources[0].URI})
	assert.False(t, isErr, out)
	assert.NotEmpty(t, out)
	out, isErr = callTool(t, cs, "list_prompts", nil)
	require.False(t, isErr, out)
	assert.Contains(t, out, "x_everything_")

	// muster list mcpserver: the router's servers with their tools counted.
	out, _ = musterCall(t, cs, "core_mcpserver_list", nil)
	assert.Contains(t, out, `"name":"everything"`)
	assert.Contains(t, out, `"toolsCount":`)
}

func TestE2EDirectViewFollowsRealFiles(t *testing.T) {
	e := startFS(t)
	changed := make(chan time.Time, 64)
	cs := e.mcpClient(t, "/mcp/direct", "2025-06-18", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notify(changed, time.Now()) },
	})
	marker := newMarker()
	tool := "x_fresh_" + marker
	require.NotContains(t, toolNames(t, cs), tool)

	// A new server file: the client hears of it and lists the new tool.
	drainSignals(changed)
	written := time.Now()
	e.write(t, "mcpservers/fresh.yaml", mcpServerYAML("fresh", stdioSpec("-tools", "echo,"+marker)...))
	eventually(t, "list_changed brings "+tool, func() bool {
		select {
		case <-changed:
			return slices.Contains(toolNames(t, cs), tool)
		default:
			return false
		}
	})
	t.Logf("new server file to its tool listed after list_changed: %s", time.Since(written).Round(time.Millisecond))
	res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"n": 1}})
	require.NoError(t, err)
	assert.Equal(t, marker+` {"n":1}`, res.Content[0].(*mcp.TextContent).Text, "called natively")

	// A managed server that adds a tool of its own.
	drainSignals(changed)
	e.write(t, "mcpservers/grow.yaml", mcpServerYAML("grow", stdioSpec("-tools", "echo", "-add-tool-after", "1s")...))
	eventually(t, "the server's own new tool is listed", func() bool {
		select {
		case <-changed:
			return slices.Contains(toolNames(t, cs), "x_grow_late")
		default:
			return false
		}
	})

	// Deleting the file removes the tool the same way.
	drainSignals(changed)
	removed := time.Now()
	e.remove(t, "mcpservers/fresh.yaml")
	eventually(t, "list_changed takes "+tool+" away", func() bool {
		select {
		case <-changed:
			return !slices.Contains(toolNames(t, cs), tool)
		default:
			return false
		}
	})
	t.Logf("server file deleted to its tool gone after list_changed: %s", time.Since(removed).Round(time.Millisecond))
	// Its call says, as muster's does, that its server is not found.
	res, err = cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tool})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Equal(t, fmt.Sprintf("server not found: fresh: tool %q: mcp server MCPServer/default/fresh is not running: its definition is deleted", tool),
		res.Content[0].(*mcp.TextContent).Text)
}
