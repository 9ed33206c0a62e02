package supervisor_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
)

// musterd's session to a server claims no client capability it does not
// serve: no roots list that changes (the go-sdk's client claims
// roots.listChanged unless told otherwise), no sampling, no elicitation. A
// server that asked for them would be answered by nobody. (The go-sdk
// v1.8 encodes "roots":{} in every client's initialize, whatever the
// client claims: its deprecated Roots field is a struct, which omitempty
// does not leave out. Its roots/list answer is then an empty list.)
func TestTheSessionToAServerClaimsNoCapabilityItDoesNotServe(t *testing.T) {
	t.Parallel()
	claimed := make(chan *mcp.ClientCapabilities, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "listener", Version: "v1"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			select {
			case claimed <- req.Session.InitializeParams().Capabilities:
			default:
			}
		},
	})
	mcp.AddTool(server, &mcp.Tool{Name: "work"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	httpServer := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(httpServer.Close)
	h := newHarness(t, supervisor.Options{PingInterval: time.Hour})
	obs := h.ensure(t, key("listener"), remote(v1alpha1.MCPServerTypeStreamableHTTP, httpServer.URL))
	require.Equal(t, connected, obs.State)
	var caps *mcp.ClientCapabilities
	select {
	case caps = <-claimed:
	case <-time.After(deadline):
		t.Fatal("the server was never initialized")
	}
	require.NotNil(t, caps)
	raw, err := json.Marshal(caps)
	require.NoError(t, err)
	assert.JSONEq(t, `{"roots":{}}`, string(raw), "no roots listChanged, sampling or elicitation claimed")
}
