package main

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client that gives up mid-call cancels it at the server, through the
// endpoint against a real stdio server; so does a client that ends its
// session mid-call (DELETE). The other faults (a server killed mid-call, a
// spec-change restart under calls in flight, a call to a restarting
// server) are e2e_mcp_faults_each_test.go's, one test each. Every wait is
// bounded: a call by callDeadline, a progress or a result by e2eDeadline.
func TestE2EMCPClientCancellingOrEndingItsSessionCancelsTheCallAtTheServer(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/slow.yaml", mcpServerYAML("slow", stdioSpec("-tools", "echo,"+marker, "-slow-tool", "slow")...))
	seen := newProgressSeen()
	cs := e.mcpClient(t, "/mcp/direct", "2025-06-18", &mcp.ClientOptions{ProgressNotificationHandler: seen.handler})
	eventually(t, "x_slow_slow is listed", func() bool { return slices.Contains(toolNames(t, cs), "x_slow_slow") })
	// mcp-fake's slow_cancelled, exposed without its prefix repeated.
	cancelledCount := func() string {
		text, isError := callTool(t, cs, "x_slow_cancelled", nil)
		require.False(t, isError, text)
		return text
	}
	require.Equal(t, "0", cancelledCount())
	slow := map[string]any{"steps": 600, "interval": "100ms"}

	// A client that gives up mid-call.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan callOutcome, 1)
	go func() { done <- timedCall(ctx, cs, "x_slow_slow", "given-up", slow) }()
	seen.wait(t, "given-up") // the server works on it
	cancel()
	select {
	case o := <-done:
		requireNoHang(t, "the cancelled call", o)
		require.ErrorIs(t, o.err, context.Canceled, "the call ends with the client's cancellation")
	case <-time.After(e2eDeadline):
		t.Fatal("a call the client cancelled does not return")
	}
	eventually(t, "the server saw the cancellation", func() bool { return cancelledCount() == "1" })

	// A client that goes away altogether, mid-call: its session closes,
	// and its call is cancelled at the server.
	otherSeen := newProgressSeen()
	other := e.mcpClient(t, "/mcp/direct", "2025-06-18", &mcp.ClientOptions{ProgressNotificationHandler: otherSeen.handler})
	otherDone := make(chan callOutcome, 1)
	go func() { otherDone <- timedCall(context.Background(), other, "x_slow_slow", "abandoned", slow) }()
	otherSeen.wait(t, "abandoned") // the server works on it
	// The client ends its session as the protocol has it, a DELETE (the
	// go-sdk's client sends it only once its own calls are over).
	req, err := http.NewRequestWithContext(callCtx(t), http.MethodDelete, "http://"+e.addr+"/mcp/direct", nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", other.ID())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	eventually(t, "the closed session's call was cancelled at the server", func() bool { return cancelledCount() == "2" })
	select {
	case o := <-otherDone:
		requireNoHang(t, "the call of the closed session", o)
		assert.True(t, o.err != nil || o.isError, "the call of a closed session does not succeed: %q", o.text)
	case <-time.After(e2eDeadline):
		t.Fatal("the call of a closed session does not return")
	}
}
