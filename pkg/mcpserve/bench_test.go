package mcpserve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallThroughTheEndpoint is one tools/call through /mcp/direct
// to a backend that answers at once, beside BenchmarkCallThroughABareSDKServer,
// the same call to a go-sdk server with nothing of musterd's: the
// difference is the endpoint's own cost per call.
func BenchmarkCallThroughTheEndpoint(b *testing.B) {
	backend := &fakeBackend{call: echo, tools: []*mcp.Tool{echoTool("x_fake_echo")}}
	srv, err := New(Options{Backend: backend, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	benchCalls(b, ts.URL+PathDirect, "x_fake_echo")
}

func BenchmarkCallThroughABareSDKServer(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "0"}, nil)
	s.AddTool(echoTool("x_fake_echo"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, _ := decodeArguments(req)
		return echo(ctx, req.Params.Name, args, nil)
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer ts.Close()
	benchCalls(b, ts.URL, "x_fake_echo")
}

func benchCalls(b *testing.B, url, tool string) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "m"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// stableBackend offers the same slice of tools while nothing changes, as
// the router does.
type stableBackend struct {
	*fakeBackend
	tools []*mcp.Tool
}

func (b *stableBackend) Tools() []*mcp.Tool { return b.tools }

// BenchmarkRefreshWithNothingChanged is a Refresh after which the Backend
// offers the very set of 100,000 tools it did: what most Refreshes are
// (one per change of a server's resources or prompts).
func BenchmarkRefreshWithNothingChanged(b *testing.B) {
	tools := make([]*mcp.Tool, 100_000)
	for i := range tools {
		tools[i] = echoTool(fmt.Sprintf("x_fake_%06d", i))
	}
	srv, err := New(Options{Backend: &stableBackend{fakeBackend: &fakeBackend{call: echo}, tools: tools}, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		srv.Refresh()
	}
}
