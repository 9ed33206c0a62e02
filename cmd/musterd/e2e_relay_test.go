package main

// A 2026-07-28 server's input-required results, relayed to a 2026-07-28
// client through musterd: the go-sdk's conformance server managed as a
// stdio server, go-sdk clients of the newest generation, and the request
// state musterd seals on the way.

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
)

// A newer client's answers reach a newer server's input requests through
// either view, the request state sealed on the way; a forged, replayed or
// another call's state is refused, and the server never sees one.
func TestE2EInputRequestsRelayToANewGenerationClient(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	e := startFS(t)
	e.write(t, "mcpservers/conf.yaml", mcpServerYAML("conf", "type: stdio", "autoStart: true", "command: "+yamlValue(bin)))
	e.waitServer(t, "conf", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	// The go-sdk client fulfils input requests itself and calls again.
	var asked atomic.Int32
	answering := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "ok": true}}, nil
	}}
	for path, tool := range map[string]string{
		"/mcp/servers/conf": "test_input_required_result_elicitation",
		"/mcp/direct":       "x_conf_test_input_required_result_elicitation",
	} {
		cs := e.mcpClient(t, path, "", answering)
		text, isError := callTool(t, cs, tool, nil)
		assert.False(t, isError, text)
		assert.Equal(t, "Hello, Ada!", text, path)
	}
	assert.EqualValues(t, 2, asked.Load(), "the client was asked once per call")

	// By hand: the state the client holds is musterd's, sealed.
	raw := e.mcpClient(t, "/mcp/servers/conf", "", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	call := func(params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		return raw.CallTool(ctx, params)
	}
	const tool = "test_input_required_result_request_state"
	first, err := call(&mcp.CallToolParams{Name: tool})
	require.NoError(t, err)
	require.True(t, first.NeedsInput(), "the server needs input")
	require.True(t, strings.HasPrefix(first.RequestState, "musterd1."), "the state is sealed: %q", first.RequestState)
	assert.NotContains(t, first.RequestState, "request_state", "the server's own state is not readable")
	answers := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}}

	refused := func(what, state string) {
		t.Helper()
		_, err := call(&mcp.CallToolParams{Name: tool, InputResponses: answers, RequestState: state})
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr, what)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code, what)
		assert.Contains(t, rpcErr.Message, "requestState is not one musterd issued", what)
	}
	refused("forged", first.RequestState[:len(first.RequestState)-2]+"xx")
	refused("the server's own", "request_state")

	// Another call's state: issued for this tool, used on another view.
	direct := e.mcpClient(t, "/mcp/direct", "", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	_, err = direct.CallTool(ctx, &mcp.CallToolParams{Name: "x_conf_" + tool, InputResponses: answers, RequestState: first.RequestState})
	cancel()
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr, "a state issued on another view")

	done, err := call(&mcp.CallToolParams{Name: tool, InputResponses: answers, RequestState: first.RequestState})
	require.NoError(t, err, "the state opens for its own call")
	require.NotEmpty(t, done.Content)
	assert.Equal(t, "state-ok: requestState received and confirmation accepted", done.Content[0].(*mcp.TextContent).Text,
		"the server got its own state back")
	refused("replayed", first.RequestState)
}
