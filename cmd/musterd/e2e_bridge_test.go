//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still part of MCP

package main

// A server of 2025-11-25 that asks its client mid-call, called by a client
// of 2026-07-28 through musterd: the client gets input-required results,
// and its retries deliver its answers to the waiting server. mcp-fake
// pinned to the older generation, remote (a session of its own per call,
// by default) and stdio (a process per call, by annotation); go-sdk
// clients of the newest generation that answer, and by hand, one that
// never comes back and one whose state is another's.

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/supervisor"
)

// newerClient is a go-sdk client of 2026-07-28 that answers sampling,
// elicitation and roots in name's name, and records what it was asked.
type newerClient struct {
	name  string
	mu    sync.Mutex
	asked []string
}

func (c *newerClient) note(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, what)
}

func (c *newerClient) questions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

func (c *newerClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.note("sampling")
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "from " + c.name}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.note("elicitation: " + req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": c.name}}, nil
		},
	}
}

func TestE2EAnOlderServersRequestsReachANewerClientAsInputRequiredRounds(t *testing.T) {
	remoteURL, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "sample,elicit,roots,asked", "-protocols", "2025-11-25")
	slowURL, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "elicit,asked", "-protocols", "2025-11-25")
	e := startFS(t)
	e.write(t, "mcpservers/older.yaml", annotatedServerYAML("older", nil,
		"type: streamable-http", "autoStart: true", "url: "+yamlValue(remoteURL), "timeout: 30"))
	e.write(t, "mcpservers/olderstdio.yaml", annotatedServerYAML("olderstdio",
		map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsPerClient)},
		"type: stdio", "autoStart: true", "command: "+yamlValue(fakeServer()),
		"args: "+yamlValue([]string{"-tools", "sample,elicit,roots", "-protocols", "2025-11-25"}), "timeout: 30"))
	e.write(t, "mcpservers/slow.yaml", annotatedServerYAML("slow", nil,
		"type: streamable-http", "autoStart: true", "url: "+yamlValue(slowURL), "timeout: 2"))
	for _, name := range []string{"older", "slow"} {
		s := e.waitServer(t, name, "connected", func(s serverObject) bool { return s.Status.State == "Connected" })
		assert.Equal(t, "2025-11-25", s.Status.ProtocolVersion, name)
	}
	e.waitServer(t, "olderstdio", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	t.Run("answered", func(t *testing.T) {
		for _, c := range []struct{ path, prefix string }{
			{"/mcp/servers/older", ""}, {"/mcp/direct", "x_older_"},
			{"/mcp/servers/olderstdio", ""}, {"/mcp/direct", "x_olderstdio_"},
		} {
			ada := &newerClient{name: "ada"}
			cs := e.mcpClient(t, c.path, "", ada.options())
			require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, "a client of the newest generation")
			text, isError := callTool(t, cs, c.prefix+"elicit", map[string]any{"message": "who are you?"})
			assert.False(t, isError, text)
			assert.Equal(t, `elicited: accept {"name":"ada"}`, text, c.path)
			text, isError = callTool(t, cs, c.prefix+"sample", map[string]any{"prompt": "a haiku"})
			assert.False(t, isError, text)
			assert.Equal(t, "sampled: from ada", text, c.path)
			assert.Equal(t, []string{"elicitation: who are you?", "sampling"}, ada.questions(), c.path)
		}
	})

	t.Run("roots", func(t *testing.T) {
		ada := &newerClient{name: "ada"}
		opts := ada.options()
		client := mcp.NewClient(&mcp.Implementation{Name: "ada", Version: "e2e"}, opts)
		client.AddRoots(&mcp.Root{URI: "file:///ada"})
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + e.addr + "/mcp/servers/older"}, nil)
		require.NoError(t, err)
		defer func() { _ = cs.Close() }()
		text, isError := callTool(t, cs, "roots", nil)
		assert.False(t, isError, text)
		assert.Equal(t, "roots: file:///ada", text)
	})

	// By hand: a client that takes the input-required result and never
	// comes back. The server's question waits no longer than its
	// spec.timeout (2s); then it is answered with an error, and the
	// client's late retry is told the call ended.
	t.Run("never retried", func(t *testing.T) {
		raw := e.mcpClient(t, "/mcp/servers/slow", "", &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("the client is not asked: it takes the input-required result itself")
				return nil, nil
			},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		})
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		first, err := raw.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "anyone?"}})
		require.NoError(t, err)
		require.True(t, first.NeedsInput(), "the server's question ends the request: %+v", first)
		require.Len(t, first.InputRequests, 1)
		var id string
		for k, r := range first.InputRequests {
			id = k
			assert.Equal(t, "anyone?", r.(*mcp.ElicitParams).Message)
		}
		assert.True(t, strings.HasPrefix(first.RequestState, "musterd1."), "sealed: %q", first.RequestState)

		plain := e.mcpClient(t, "/mcp/servers/slow", "2025-11-25", nil)
		var outcome string
		require.Eventually(t, func() bool {
			outcome, _ = callTool(t, plain, "asked", nil)
			return outcome != ""
		}, e2eDeadline, 50*time.Millisecond, "the server's question is answered once the timeout passes")
		assert.True(t, strings.HasPrefix(outcome, "error: "), "with an error: %q", outcome)

		_, err = raw.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "anyone?"},
			InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "late"}}},
			RequestState:   first.RequestState})
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr)
		assert.Contains(t, rpcErr.Message, "has ended")
	})

	// The state of a bridged round opens for its own caller only: one who
	// sends another Authorization is refused, and the waiting server gets
	// the answer of its own caller.
	t.Run("another user's state", func(t *testing.T) {
		as := func(who string) *mcp.ClientSession {
			return connectMCP(t, "http://"+e.addr+"/mcp/servers/older", mcpDial{
				options: &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						t.Error("the client is not asked: it takes the input-required result itself")
						return nil, nil
					},
					MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
				},
				httpClient: &http.Client{Transport: bearerTransport{who}},
			})
		}
		alice, mallory := as("alice"), as("mallory")
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		args := map[string]any{"message": "alice?"}
		first, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: args})
		require.NoError(t, err)
		require.True(t, first.NeedsInput())
		var id string
		for k := range first.InputRequests {
			id = k
		}
		answer := func(name string) mcp.InputResponseMap {
			return mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}}
		}
		_, err = mallory.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: args, InputResponses: answer("mallory"), RequestState: first.RequestState})
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr, "another user's retry")
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)

		done, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: args, InputResponses: answer("alice"), RequestState: first.RequestState})
		require.NoError(t, err)
		assert.Equal(t, `elicited: accept {"name":"alice"}`, done.Content[0].(*mcp.TextContent).Text)
	})

	// A workflow's step whose server asks: its caller of 2025-11-25 is
	// asked on a session of its own; for a caller of 2026-07-28 the step
	// fails, saying which, since the run cannot hand the question out and
	// take the answer back in the middle.
	t.Run("a workflow's step", func(t *testing.T) {
		e.write(t, "workflows/ask.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: ask
spec:
  description: asks through a step
  steps:
    - id: who
      tool: x_older_elicit
      store: true
      args:
        message: from a workflow
`)
		e.waitWorkflow(t, "ask", "Synced", "x_older_elicit")

		older := &olderClient{name: "grace"}
		text, isError := callTool(t, older.connect(t, e), "workflow_ask", nil)
		assert.False(t, isError, text)
		assert.Contains(t, text, `elicited: accept {\"name\":\"grace\"}`, "the caller was asked, and answered")
		assert.Equal(t, []string{"elicitation"}, older.questions())

		ada := &newerClient{name: "ada"}
		text, isError = callTool(t, e.mcpClient(t, "/mcp/direct", "", ada.options()), "workflow_ask", nil)
		assert.True(t, isError, text)
		assert.Contains(t, text, "who", "the failed step is named: %s", text)
		assert.Contains(t, text, "elicitation", "and what its server asked for: %s", text)
		assert.Empty(t, ada.questions(), "the newer caller was not asked")
	})

	// muster's view wraps a call's result in call_tool's own: an
	// input-required result cannot travel inside it, so a 2026-07-28
	// client's call there takes no questions, and one its server asks
	// fails the call, saying so, at once.
	t.Run("muster's view", func(t *testing.T) {
		ada := &newerClient{name: "ada"}
		cs := e.mcpClient(t, "/mcp", "", ada.options())
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
		text, isError := musterCall(t, cs, "x_older_elicit", map[string]any{"message": "who?"})
		assert.True(t, isError, text)
		assert.Contains(t, text, "elicitation", text)
		assert.Empty(t, ada.questions())
		outcome, _ := callTool(t, e.mcpClient(t, "/mcp/servers/older", "2025-11-25", nil), "asked", nil)
		assert.Equal(t, "error: client does not support elicitation", outcome, "the server's question failed at once: no call waits at the server")
	})
}
