package mcpserve

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client ending its session (DELETE) with a call in flight: the call is
// cancelled at the backend with the cause, and the DELETE returns, where
// the go-sdk alone would wait for the call to end.
func TestEndingASessionCancelsItsCallsInFlight(t *testing.T) {
	for _, path := range []string{PathDirect, PathMCP} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t, nil)
			started := make(chan struct{}, 1)
			cancelled := make(chan error, 1)
			h.backend.setTools(echoTool("x_fake_slow"))
			h.backend.call = func(ctx context.Context, _ string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
				started <- struct{}{}
				<-ctx.Done()
				cancelled <- context.Cause(ctx)
				return nil, ctx.Err()
			}
			h.srv.Refresh()
			cs := h.connect(path, "2025-06-18", nil)
			params := &mcp.CallToolParams{Name: "x_fake_slow", Arguments: map[string]any{"message": "x"}}
			if path == PathMCP {
				params = &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "x_fake_slow", "arguments": map[string]any{"message": "x"}}}
			}
			returned := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(context.Background(), params)
				returned <- err
			}()
			waitFor(t, started, "the call to reach the backend")
			require.Equal(t, 1, h.srv.calls.inFlight(cs.ID()))

			// The DELETE a client ending its session sends (the go-sdk's
			// own Close waits for the client's pending calls first).
			closed := make(chan int, 1)
			go func() {
				req, err := http.NewRequest(http.MethodDelete, h.url+path, nil)
				require.NoError(t, err)
				req.Header.Set(sessionHeader, cs.ID())
				resp, err := h.http.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				closed <- resp.StatusCode
			}()
			assert.ErrorIs(t, waitFor(t, cancelled, "the backend's call to be cancelled"), errSessionClosed)
			assert.Equal(t, http.StatusNoContent, waitFor(t, closed, "the session's DELETE to return"))
			assert.Error(t, waitFor(t, returned, "the client's call to return"))
			assert.Zero(t, h.srv.calls.inFlight(cs.ID()))
		})
	}
}
