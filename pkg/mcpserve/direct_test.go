package mcpserve

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/router"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listNames lists cs's tools by name.
func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	return names
}

// waitFor receives from ch, failing the test after a generous deadline.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
	}
	var zero T
	return zero
}

func TestDirectViewListsEveryToolAndTellsSessionsWhenTheSetChanges(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.setTools(echoTool("x_fake_echo"))
	h.srv.Refresh()
	changed := make(chan struct{}, 16)
	opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}
	a := h.connect(PathDirect, "2025-06-18", opts)
	b := h.connect(PathDirect, musterProtocol, opts)

	want := append(append([]string{}, coreToolNames...), "x_fake_echo")
	assert.Equal(t, want, listNames(t, a))

	// A server starts with a new tool: every session hears of it, and its
	// next list has it.
	h.backend.setTools(echoTool("x_fake_echo"), echoTool("x_other_ping"))
	require.True(t, h.srv.Refresh())
	waitFor(t, changed, "list_changed after a tool appeared")
	waitFor(t, changed, "list_changed on the second session")
	assert.Equal(t, append(append([]string{}, coreToolNames...), "x_fake_echo", "x_other_ping"), listNames(t, a))
	assert.Equal(t, 2.0, h.counter(h.srv.metrics.listChanged.WithLabelValues(viewDirect, "tools")), "one notification per session")

	// Nothing changed: Refresh says so, and the count stays.
	assert.False(t, h.srv.Refresh())

	// A restart with another definition of the same tool is a change too.
	changedEcho := echoTool("x_fake_echo")
	changedEcho.Description = "Echo, version 2"
	h.backend.setTools(changedEcho, echoTool("x_other_ping"))
	require.True(t, h.srv.Refresh())
	waitFor(t, changed, "list_changed after a definition changed")
	waitFor(t, changed, "list_changed on the second session")

	// The server goes: its tools go, and a call to one fails at once,
	// naming it.
	h.backend.setTools()
	require.True(t, h.srv.Refresh())
	waitFor(t, changed, "list_changed after the tools went")
	assert.Equal(t, coreToolNames, listNames(t, b))
	_, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_fake_echo", Arguments: map[string]any{"message": "hi"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown tool "x_fake_echo"`)
}

func TestDirectCallsPassThroughContentProgressAndCancellation(t *testing.T) {
	h := newHarness(t, nil)
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	h.backend.setTools(echoTool("x_fake_rich"), echoTool("x_fake_slow"), echoTool("x_fake_broken"))
	h.backend.call = func(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		switch name {
		case "x_fake_slow":
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		case "x_fake_broken":
			return nil, assert.AnError
		}
		if progress != nil {
			progress(&mcp.ProgressNotificationParams{Progress: 1, Total: 2, Message: "half"})
		}
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				&mcp.TextContent{Text: args["message"].(string)},
				&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
				&mcp.ResourceLink{URI: "test://x", Name: "x"},
			},
			StructuredContent: map[string]any{"n": 1.0},
		}, nil
	}
	h.srv.Refresh()
	progressed := make(chan *mcp.ProgressNotificationParams, 1)
	cs := h.connect(PathDirect, "2025-06-18", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progressed <- r.Params
	}})

	params := &mcp.CallToolParams{Name: "x_fake_rich", Arguments: map[string]any{"message": "hi"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.Len(t, res.Content, 3)
	assert.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, "image/png", res.Content[1].(*mcp.ImageContent).MIMEType)
	assert.Equal(t, "test://x", res.Content[2].(*mcp.ResourceLink).URI)
	assert.Equal(t, map[string]any{"n": 1.0}, res.StructuredContent)
	p := waitFor(t, progressed, "progress")
	assert.Equal(t, "tok-1", p.ProgressToken, "the client's own token")
	assert.Equal(t, "half", p.Message)

	// A call the backend cannot make is a tool error naming the cause.
	res = call(t, cs, "x_fake_broken", map[string]any{"message": "x"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), assert.AnError.Error())

	// A client that gives up cancels the call at the backend.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x_fake_slow", Arguments: map[string]any{"message": "x"}})
		done <- err
	}()
	waitFor(t, started, "the slow call to start")
	cancel()
	assert.ErrorIs(t, waitFor(t, cancelled, "the cancellation at the backend"), context.Canceled)
	assert.Error(t, waitFor(t, done, "the client's call to return"))
}

func TestAToolWithASchemaTheSDKRejectsStaysOffDirectWithoutAPanic(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.setTools(
		&mcp.Tool{Name: "x_bad_stringy", InputSchema: map[string]any{"type": "string"}},
		&mcp.Tool{Name: "x_bad_none"},
		&mcp.Tool{Name: "x_bad_raw", InputSchema: json.RawMessage(`{"type":"array"}`)},
		&mcp.Tool{Name: "x_bad_null", InputSchema: json.RawMessage(`null`)},
		&mcp.Tool{Name: "x_bad_struct", InputSchema: struct{ Type string }{"object"}}, // encodes "Type"
		&mcp.Tool{Name: "x_fake_raw", InputSchema: json.RawMessage(`{"properties":{},"type":"object"}`)},
		&mcp.Tool{Name: "x_fake_struct", InputSchema: struct {
			Type string `json:"type"`
		}{"object"}},
		echoTool("x_fake_echo"),
	)
	h.srv.Refresh()
	direct := h.connect(PathDirect, "2025-06-18", nil)
	assert.Equal(t, append(append([]string{}, coreToolNames...), "x_fake_echo", "x_fake_raw", "x_fake_struct"), listNames(t, direct))
	// Still listed and callable through muster's view.
	meta := h.connect(PathMCP, musterProtocol, nil)
	assert.Contains(t, text(t, call(t, meta, "list_tools", nil)), `"x_bad_stringy"`)
	res := call(t, meta, "call_tool", map[string]any{"name": "x_bad_stringy", "arguments": map[string]any{"message": "m"}})
	assert.False(t, res.IsError)
}

func TestCoreToolsAreNativeOnDirectAndRejectWrongArguments(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(PathDirect, "2025-06-18", nil)
	assert.JSONEq(t, `{"services":[],"total":0}`, text(t, call(t, cs, "core_service_list", nil)))
	res := call(t, cs, "core_service_status", map[string]any{"name": 3})
	assert.True(t, res.IsError)
	assert.Equal(t, `core_service_status: argument "name" must be a string, not an integer`, text(t, res))
	res = call(t, cs, "core_events", map[string]any{"limit": "all"})
	assert.True(t, res.IsError)
	assert.Equal(t, `core_events: argument "limit" must be a number, not a string`, text(t, res))
}

func TestRouterCallsEveryExposedName(t *testing.T) {
	wf := &fakeProvider{tools: []*mcp.Tool{{Name: "workflow_greet", InputSchema: map[string]any{"type": "object"}}}}
	h := newHarness(t, func(o *setup) { o.sources = []router.Source{wf} })
	h.backend.setTools(echoTool("x_fake_echo"), echoTool("core_service_list"))
	h.srv.Refresh()
	ctx := context.Background()

	res, err := h.backend.CallTool(ctx, "x_fake_echo", map[string]any{"message": "m"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "x_fake_echo: m", text(t, res))
	res, err = h.backend.CallTool(ctx, "workflow_greet", map[string]any{"who": "a"}, nil)
	require.NoError(t, err)
	assert.Equal(t, `workflow_greet ran with {"who":"a"}`, text(t, res))
	res, err = h.backend.CallTool(ctx, "core_service_list", nil, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"services":[],"total":0}`, text(t, res), "a core tool keeps its name against a server's tool of the same name")
	_, err = h.backend.CallTool(ctx, "x_nope", nil, nil)
	assert.ErrorIs(t, err, ErrUnknownTool)
}

func TestAClientThatClosesItsSessionMidCallCancelsTheCall(t *testing.T) {
	for _, path := range []string{PathDirect, PathMCP} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t, nil)
			started := make(chan struct{})
			cause := make(chan error, 1)
			h.backend.setTools(echoTool("x_fake_slow"))
			h.backend.call = func(ctx context.Context, _ string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
				close(started)
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return nil, ctx.Err()
			}
			h.srv.Refresh()
			cs := h.connect(path, "2025-06-18", nil)
			name, args := "x_fake_slow", map[string]any{"message": "m"}
			if path == PathMCP {
				name, args = "call_tool", map[string]any{"name": "x_fake_slow", "arguments": args}
			}
			go func() { _, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args}) }()
			waitFor(t, started, "the call to reach the backend")
			// The client ends its session, as the protocol has it: a
			// DELETE. (The go-sdk's own client sends it only once its calls
			// are over, and its server would close the session only then.)
			code, _, body := h.send(http.MethodDelete, path, "", map[string]string{sessionHeader: cs.ID()})
			assert.Equal(t, http.StatusNoContent, code, body)
			assert.ErrorIs(t, waitFor(t, cause, "the call's cancellation"), ErrSessionClosed)
		})
	}
}

// A Refresh encodes only the tools it has not seen: one that a source
// returns again (the same pointer) keeps its encoding, and one replaced by
// an equal tool is not registered again.
func TestARefreshEncodesOnlyNewTools(t *testing.T) {
	h := newHarness(t, nil)
	kept, replaced := echoTool("x_fake_kept"), echoTool("x_fake_replaced")
	h.backend.setTools(kept, replaced)
	require.True(t, h.srv.Refresh())
	before := maps.Clone(h.srv.onDirect)

	h.backend.setTools(kept, echoTool("x_fake_replaced"))
	assert.False(t, h.srv.Refresh(), "an equal tool is no change")
	after := maps.Clone(h.srv.onDirect)
	assert.Same(t, &before["x_fake_kept"].def[0], &after["x_fake_kept"].def[0], "the same tool kept its encoding")
	assert.NotSame(t, &before["x_fake_replaced"].def[0], &after["x_fake_replaced"].def[0], "a new tool was encoded")
	assert.Equal(t, before["x_fake_replaced"].def, after["x_fake_replaced"].def)
}
