package main

// End-to-end tests of the view of one server, /mcp/servers/<name>: the real
// binary, a real mcp-fake and npm's server-everything, and the go-sdk's
// client.

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
)

// A server's view shows it as it offers itself: its serverInfo,
// instructions and capabilities, its tools, prompts and resources under
// their own names; its calls reach it; and a server that does not run,
// or is not declared, is answered with an error naming it.
func TestE2EAServersViewServesItAsItOffersItself(t *testing.T) {
	everything := npmtest.ServerEverything(t)
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", append(stdioSpec("-tools", "echo,reverse"), "toolPrefix: fk")...))
	e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true", "command: "+yamlValue(everything), `args: ["stdio"]`, "timeout: 60"))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	e.waitServer(t, "everything", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	fake := e.mcpClient(t, "/mcp/servers/fake", "", nil)
	assert.Equal(t, "mcp-fake", fake.InitializeResult().ServerInfo.Name, "the server's own serverInfo")
	assert.Equal(t, []string{"echo", "reverse"}, toolNames(t, fake), "its own names: no prefix")
	res, err := fake.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, `echo {"message":"hi"}`, res.Content[0].(*mcp.TextContent).Text)

	ev := e.mcpClient(t, "/mcp/servers/default/everything", "", nil)
	init := ev.InitializeResult()
	assert.Contains(t, strings.ToLower(init.ServerInfo.Name), "everything")
	assert.NotEmpty(t, init.Instructions, "its own instructions")
	assert.NotNil(t, init.Capabilities.Prompts)
	names := toolNames(t, ev)
	assert.Contains(t, names, "get-sum", "its own tool names")
	res, err = ev.CallTool(context.Background(), &mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "5")
	eventually(t, "its prompts and resources are listed", func() bool {
		var prompts, resources []string
		for p, err := range ev.Prompts(context.Background(), nil) {
			if err != nil {
				return false
			}
			prompts = append(prompts, p.Name)
		}
		for r, err := range ev.Resources(context.Background(), nil) {
			if err != nil {
				return false
			}
			resources = append(resources, r.URI)
		}
		return slices.Contains(prompts, "simple-prompt") && len(resources) > 0
	})
	got, err := ev.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "simple-prompt"})
	require.NoError(t, err)
	assert.NotEmpty(t, got.Messages)
	var uri string
	for r, err := range ev.Resources(context.Background(), nil) {
		require.NoError(t, err)
		uri = r.URI
		break
	}
	read, err := ev.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	require.NoError(t, err)
	assert.NotEmpty(t, read.Contents)

	code, body := e.post(t, "/mcp/servers/nobody", initializeBody)
	assert.Equal(t, http.StatusNotFound, code, body)
	assert.Contains(t, body, "MCPServer/default/nobody")
	assert.Contains(t, body, "no MCPServer of that name is declared", body)

	out, _ := e.cli(t, "stop", "fake")
	t.Log(out)
	e.waitServer(t, "fake", "stopped", func(s serverObject) bool { return s.Status.State == "Stopped" })
	code, body = e.post(t, "/mcp/servers/fake", initializeBody)
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "MCPServer/default/fake")
	assert.Contains(t, body, "Stopped")
}

// initializeBody opens a session.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends body as a JSON-RPC request to path, as a streamable client
// opens a session, and returns the answer's status and body.
func (d *runningDaemon) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+d.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}
