package mcpserve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

func TestAnSSEClientWhoseStreamClosesMidCallCancelsTheCall(t *testing.T) {
	h := newHarness(t, nil)
	started := make(chan struct{})
	cause := make(chan error, 1)
	h.backend.setTools(echoTool("x_fake_slow"))
	giveUp := make(chan struct{}) // so that a failing test ends
	h.backend.call = func(ctx context.Context, _ string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-giveUp:
		}
		return nil, ctx.Err()
	}
	h.srv.Refresh()
	// The stream lives as long as the context its GET was made with.
	stream, closeStream := context.WithCancel(context.Background())
	defer closeStream()
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client", Version: "0"}, nil)
	cs, err := c.Connect(stream, &mcp.SSEClientTransport{Endpoint: h.url + PathSSE, HTTPClient: h.http}, nil)
	require.NoError(t, err)
	defer cs.Close()
	defer close(giveUp)
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "x_fake_slow", "arguments": map[string]any{"message": "m"}}})
	}()
	waitFor(t, started, "the call to reach the backend")
	closeStream()
	assert.ErrorIs(t, waitFor(t, cause, "the call's cancellation"), ErrSessionClosed)
}

func TestCoreEventsFollowOverSSEWritesNotificationsToTheStream(t *testing.T) {
	h := newHarness(t, nil)
	declareAll(h)
	h.bus.Start()

	// A raw SSE session, as an old client holds one: the GET's first event
	// names where to POST.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url+PathSSE, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := h.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stream := make(chan string, 16)
	go readEvents(resp.Body, stream)
	endpoint := waitFor(t, stream, "the endpoint event")
	require.True(t, strings.Contains(endpoint, "sessionid="), endpoint)

	post := func(body string) {
		t.Helper()
		code, _, out := h.send(http.MethodPost, endpoint, body, nil)
		require.Equal(t, http.StatusAccepted, code, out)
	}
	next := func(what string) string {
		t.Helper()
		for {
			data := waitFor(t, stream, what)
			if strings.Contains(data, what) {
				return data
			}
		}
	}
	post(initialize)
	next(`"id":1`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"core_events","arguments":{"follow":true,"resourceName":"fake"}}}}`)
	answer := next(`"id":2`)
	require.Contains(t, answer, `\"isError\":false`, "follow is accepted over SSE")

	h.observe(remoteKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateConnected})
	h.observe(fakeKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateStarting})
	h.bus.Publish(events.ResourceSynced{Meta: events.NewMetaAt(at, "c-9"), Key: remoteKey, Duration: time.Millisecond}) // filtered out
	h.bus.Publish(events.ResourceSynced{Meta: events.NewMetaAt(at, "c-9"), Key: fakeKey, Duration: time.Millisecond})
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/muster/event","params":{"timestamp":"2026-11-24 12:00:00","resource_type":"MCPServer",
		"resource_name":"fake","namespace":"default","reason":"MCPServerStarting","message":"MCPServer fake service is starting up","type":"Normal"}}`,
		next("notifications/muster/event"))
}
