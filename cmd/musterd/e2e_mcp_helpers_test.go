package main

// The MCP client side of the end-to-end tests: one way to connect the
// go-sdk client to the real musterd, and the calls every test makes
// through it. Every request is bounded by callDeadline, so that a call
// that hangs fails its test (or the eventually polling it) instead of
// stalling until go test's -timeout.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// callDeadline bounds one MCP request of these tests (a connect, a call, a
// listing): far above any bound musterd promises (a dead server's call
// fails within a second, a restart waits up to 30 s), so that only a hang
// reaches it; and below e2eDeadline, so that a hung call inside eventually
// fails there, saying so.
const callDeadline = 50 * time.Second

// mcpDial is how a test connects: the protocol version ("" is the go-sdk's
// newest), the client's options (nil: none) and its HTTP client (nil:
// http.DefaultClient).
type mcpDial struct {
	version    string
	options    *mcp.ClientOptions
	httpClient *http.Client
}

// dialMCP connects the go-sdk client to endpoint, as muster's CLI connects
// to `muster serve`, within callDeadline. The session is the caller's to
// close.
func dialMCP(endpoint string, d mcpDial) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "muster", Version: "e2e"}, d.options)
	var opts *mcp.ClientSessionOptions
	if d.version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: d.version}
	}
	// The session outlives ctx: the transport detaches its connection
	// from the context of Connect.
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: d.httpClient}, opts)
}

// connectMCP is dialMCP that requires the session and closes it when the
// test ends.
func connectMCP(t *testing.T, endpoint string, d mcpDial) *mcp.ClientSession {
	t.Helper()
	cs, err := dialMCP(endpoint, d)
	require.NoError(t, err, "connect to %s", endpoint)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// mcpClient connects to the daemon's path (/mcp or /mcp/direct) at
// protocol version ("" is the go-sdk's newest).
func (d *runningDaemon) mcpClient(t *testing.T, path, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := dialMCP("http://"+d.addr+path, mcpDial{version: version, options: opts})
	require.NoError(t, err, "connect to %s\n%s", path, d.stderr)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// directClient connects to the daemon's /mcp/direct, where every tool is
// served natively. progress, if set, receives the notifications of every
// call.
func (d *runningDaemon) directClient(t *testing.T, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress(req.Params) }
	}
	return d.mcpClient(t, "/mcp/direct", "", opts)
}

// callTool calls tool, within callDeadline, and returns its first text and
// its isError.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, tool)
	require.NotEmpty(t, res.Content, tool)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%s: content %T", tool, res.Content[0])
	return tc.Text, res.IsError
}

// callJSON calls tool and decodes its one text item as a JSON object.
func callJSON(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	text, isError := callTool(t, cs, tool, args)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &doc), "%s answered %q", tool, text)
	return doc, isError
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

// asyncRun is a call started in the background: its result's first text
// decoded as a JSON object, or a "call error" entry saying why there is
// none.
type asyncRun chan map[string]any

// callAsync starts calling tool in the background, within callDeadline.
func callAsync(cs *mcp.ClientSession, tool string, args map[string]any) asyncRun {
	done := make(asyncRun, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || len(res.Content) == 0 {
			done <- map[string]any{"call error": "no result: " + errText(err)}
			return
		}
		text := ""
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			done <- map[string]any{"call error": "not a JSON object: " + text}
			return
		}
		done <- doc
	}()
	return done
}

// wait is the call's result, failing the test if it has none within
// e2eDeadline.
func (r asyncRun) wait(t *testing.T, what string) map[string]any {
	t.Helper()
	select {
	case doc := <-r:
		return doc
	case <-time.After(e2eDeadline):
		t.Fatalf("%s: no result within %s", what, e2eDeadline)
		return nil
	}
}

func errText(err error) string {
	if err == nil {
		return "empty content"
	}
	return err.Error()
}

// toolNames lists cs's native tools, within callDeadline.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	return names
}

// hasTool reports whether cs lists tool.
func hasTool(t *testing.T, cs *mcp.ClientSession, tool string) bool {
	t.Helper()
	return slices.Contains(toolNames(t, cs), tool)
}

// callCtx is the context of one request a test makes itself: it ends at
// callDeadline, or with the test.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), callDeadline)
	t.Cleanup(cancel)
	return ctx
}

// notify sends on ch without blocking: a notification handler's way to
// say "at least one since the last drain", whatever the buffer holds.
func notify[T any](ch chan<- T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// drainSignals empties ch of what it holds, so that a wait that follows
// sees only what is sent from now on: a list_changed left over from an
// earlier change must not stand in for the one a test waits for.
func drainSignals[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
