package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A question whose call the client cancels is recorded, so that a test
// can see what the server got when its client went away.
func TestAskedRecordsAQuestionWhoseCallWasCancelled(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		testAskedRecords(t, func(t *testing.T) mcp.Transport {
			return &mcp.CommandTransport{Command: fakeCommand(t.Context(), "-tools", "elicit,asked")}
		})
	})
	t.Run("http", func(t *testing.T) {
		testAskedRecords(t, func(t *testing.T) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: serveOverHTTP(t, "-tools", "elicit,asked")}
		})
	})
}

func testAskedRecords(t *testing.T, transport func(*testing.T) mcp.Transport) {
	asked := make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(2 * time.Second):
				return nil, errors.New("gave up waiting")
			}
		},
	})
	session, err := client.Connect(t.Context(), transport(t),
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // 2026-07-28 has no server-to-client requests
	require.NoError(t, err)
	defer session.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "wait"}})
		done <- err
	}()
	<-asked
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool {
		res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "asked"})
		return err == nil && res.Content[0].(*mcp.TextContent).Text != ""
	}, 10*time.Second, 20*time.Millisecond)
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "asked"})
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "context canceled")
}
