//lint:file-ignore SA1019 a server's log messages are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients of 2025-11-25 that use them.

package mcpserve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// A server's log message that reaches a bound client after the call's
// response has closed the call's stream, but before the call's context
// ends, is not lost: it takes the session's own stream. A message the
// server sent before its response is overtaken by it this way (the go-sdk
// hands a response to its caller at once, and a notification to its
// handler in turn).
func TestALogMessageOvertakenByItsCallsResponseTakesTheSessionsStream(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	type call struct {
		ss  *mcp.ServerSession
		ctx context.Context
	}
	calls := make(chan call, 1)
	server.AddTool(echoTool("answer"),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The call as a bound client holds it: still running, as far as
			// its context says, once its response is out.
			calls <- call{req.Session, context.WithoutCancel(ctx)}
			return &mcp.CallToolResult{}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)

	logged := make(chan string, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logged <- req.Params.Data.(string) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "answer"})
	require.NoError(t, err)

	answered := <-calls
	bound := boundClient{client: &client{ss: answered.ss}, call: answered.ctx}
	require.NoError(t, bound.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "late"}))
	select {
	case got := <-logged:
		require.Equal(t, "late", got)
	case <-ctx.Done():
		t.Fatal("the message never reached the client")
	}
}
