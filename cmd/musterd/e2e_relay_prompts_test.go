//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 but still part of MCP: a client that offers it is asked for it

package main

// A 2026-07-28 server's input-required result of a prompt, relayed to a
// 2026-07-28 client on every view, and the client's own capabilities
// forwarded to the server: the go-sdk's conformance server managed over
// stdio, go-sdk clients of the newest generation.

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
)

// A prompt that needs its client's input reaches a 2026-07-28 client on
// /mcp, /mcp/direct and the server's view: the client answers (the
// go-sdk's client does so itself and gets the prompt again), and the
// server's prompt is made with the answer.
func TestE2EInputRequestsOfAPromptRelayToANewGenerationClient(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	e := startFS(t)
	e.write(t, "mcpservers/conf.yaml", mcpServerYAML("conf", "type: stdio", "autoStart: true", "command: "+yamlValue(bin)))
	e.waitServer(t, "conf", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	var asked atomic.Int32
	answering := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "asked by " + req.Params.Message}}, nil
	}}
	for _, path := range []string{"/mcp/servers/conf", "/mcp/direct", "/mcp"} {
		cs := e.mcpClient(t, path, "", answering)
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, path)
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		name := ""
		for p, err := range cs.Prompts(ctx, nil) {
			require.NoError(t, err, path)
			if strings.HasSuffix(p.Name, "test_input_required_result_prompt") {
				name = p.Name
			}
		}
		require.NotEmpty(t, name, "%s lists the prompt", path)
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		cancel()
		require.NoError(t, err, path)
		require.Len(t, res.Messages, 1, path)
		assert.Equal(t, "Context: asked by Please provide context for the prompt", res.Messages[0].Content.(*mcp.TextContent).Text, path)
	}
	assert.EqualValues(t, 3, asked.Load(), "the client was asked once per prompt")
}

// The server judges what it may ask of a 2026-07-28 client by the
// capabilities that client's request declares, which musterd forwards, not
// by its own session to the server (which offers nothing): a client with
// sampling only is asked for sampling only, one with elicitation too for
// both.
func TestE2EAServerAsksANewGenerationClientForWhatItDeclared(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	e := startFS(t)
	e.write(t, "mcpservers/conf.yaml", mcpServerYAML("conf", "type: stdio", "autoStart: true", "command: "+yamlValue(bin)))
	e.waitServer(t, "conf", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	sampling := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
	}
	elicitation := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	for name, c := range map[string]struct {
		opts      *mcp.ClientOptions
		want, not string
	}{
		"sampling only": {opts: &mcp.ClientOptions{CreateMessageHandler: sampling}, want: "greeting", not: "user_name"},
		"elicitation":   {opts: &mcp.ClientOptions{CreateMessageHandler: sampling, ElicitationHandler: elicitation}, want: "user_name"},
	} {
		c.opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true} // to see what the server asks
		for path, tool := range map[string]string{
			"/mcp/servers/conf": "test_input_required_result_capabilities",
			"/mcp/direct":       "x_conf_test_input_required_result_capabilities",
		} {
			cs := e.mcpClient(t, path, "", c.opts)
			ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
			cancel()
			require.NoError(t, err, "%s on %s", name, path)
			require.True(t, res.NeedsInput(), "%s on %s: the server asks", name, path)
			assert.Contains(t, res.InputRequests, "greeting", "%s on %s", name, path)
			assert.Contains(t, res.InputRequests, c.want, "%s on %s", name, path)
			if c.not != "" {
				assert.NotContains(t, res.InputRequests, c.not, "%s on %s", name, path)
			}
		}
	}
}
