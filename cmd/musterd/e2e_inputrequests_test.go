//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still part of MCP

package main

// A server's input requests (MCP 2026-07-28's InputRequiredResult) reach
// a client of 2025-11-25 as classic requests: the go-sdk's conformance
// server, managed by musterd, called through /mcp/direct by a go-sdk
// client pinned to 2025-11-25 that answers sampling, elicitation and
// roots.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/supervisor"
)

// olderClient is a client of 2025-11-25 that answers in its own name and
// records what it was asked. block makes it never answer an elicitation,
// until the request is cancelled.
type olderClient struct {
	name  string
	block bool

	mu        sync.Mutex
	asked     []string
	cancelled chan struct{} // closed when a blocked elicitation was cancelled
	release   chan struct{} // closed as the test ends: a blocked elicitation gives up
}

func (c *olderClient) ask(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, what)
}

func (c *olderClient) questions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

func (c *olderClient) connect(t *testing.T, e *fsEnv) *mcp.ClientSession {
	t.Helper()
	c.cancelled, c.release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	client := mcp.NewClient(&mcp.Implementation{Name: c.name, Version: "e2e"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.ask("sampling")
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "from " + c.name}}, nil
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.ask("elicitation")
			if c.block {
				select {
				case <-ctx.Done():
					once.Do(func() { close(c.cancelled) })
					return nil, ctx.Err()
				case <-c.release:
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
			}
			if strings.Contains(req.Params.Message, "color") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "green"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": c.name}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///" + c.name})
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + e.addr + "/mcp/direct"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
	t.Cleanup(func() { _ = cs.Close() })
	t.Cleanup(func() { close(c.release) }) // first: a blocked question must not hold Close
	return cs
}

func TestE2EInputRequestsReachAnOlderClientAsClassicRequests(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	e := startFS(t)
	perClient := map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsPerClient)}
	e.write(t, "mcpservers/ir.yaml", annotatedServerYAML("ir", perClient,
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin), "timeout: 20"))
	e.write(t, "mcpservers/irshared.yaml", annotatedServerYAML("irshared", nil,
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin), "timeout: 20"))
	e.write(t, "mcpservers/irslow.yaml", annotatedServerYAML("irslow", perClient,
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin), "timeout: 3"))
	for _, name := range []string{"ir", "irshared", "irslow"} {
		s := e.waitServer(t, name, "running", func(s serverObject) bool { return s.Status.State == "Running" })
		assert.Equal(t, "2026-07-28", s.Status.ProtocolVersion, "%s's shared session speaks the newest generation", name)
	}

	t.Run("answered", func(t *testing.T) {
		alice := &olderClient{name: "alice"}
		cs := alice.connect(t, e)
		got, isError := callJSON(t, cs, "core_mcpserver_get", map[string]any{"name": "ir"})
		require.False(t, isError)
		assert.Equal(t, "2026-07-28", got["protocolVersion"], "core_mcpserver_get shows the generation")
		for tool, want := range map[string]string{
			"elicitation":     "Hello, alice!",
			"sampling":        "Sampling response: from alice",
			"list_roots":      "Client exposed 1 root(s): file:///alice",
			"multiple_inputs": "from alice alice — 1 root(s) visible",
			"multi_round":     "Multi-round complete: alice likes green",
		} {
			text, isError := callTool(t, cs, "x_ir_test_input_required_result_"+tool, nil)
			assert.False(t, isError, "%s: %s", tool, text)
			assert.Equal(t, want, text, tool)
		}
		assert.ElementsMatch(t, []string{"elicitation", "sampling", "elicitation", "sampling", "elicitation", "elicitation"}, alice.questions(),
			"its handlers were asked (roots are answered by the go-sdk client from its root set)")
	})

	t.Run("shared", func(t *testing.T) {
		bob := &olderClient{name: "bob"}
		cs := bob.connect(t, e)
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x_irshared_test_input_required_result_elicitation", Arguments: map[string]any{}})
		var text string
		if err != nil {
			text = err.Error()
		} else {
			require.True(t, res.IsError, "a call whose input nobody can give fails")
			text = res.Content[0].(*mcp.TextContent).Text
		}
		assert.Contains(t, text, "elicitation/create refused")
		assert.Contains(t, text, "shared by all of musterd's clients", "the error says why: %s", text)
		assert.Empty(t, bob.questions())
	})

	t.Run("never answered", func(t *testing.T) {
		carol := &olderClient{name: "carol", block: true}
		cs := carol.connect(t, e)
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x_irslow_test_input_required_result_elicitation", Arguments: map[string]any{}})
		var text string
		if err != nil {
			text = err.Error()
		} else {
			require.True(t, res.IsError, "a call whose input never came fails")
			text = res.Content[0].(*mcp.TextContent).Text
		}
		assert.Contains(t, text, "3s", "spec.timeout bounds it: %s", text)
		assert.Less(t, time.Since(start), callDeadline/2)
		// The client's question stays open on its side: musterd asked it on
		// the stream of the call, which ended with the call, and the
		// cancellation has no stream to go on. The server waits for
		// nothing: it answers the next call at once.
		dave := &olderClient{name: "dave"}
		text, isError := callTool(t, dave.connect(t, e), "x_irslow_test_input_required_result_elicitation", nil)
		assert.False(t, isError, text)
		assert.Equal(t, "Hello, dave!", text)
	})
}
