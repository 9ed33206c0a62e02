package mcpserve

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// steadyBackend lists the very same tools slice at every call, as the
// router does while no source's tools changed.
type steadyBackend struct {
	*viewBackend
	tools []*mcp.Tool
}

func (b *steadyBackend) Tools() []*mcp.Tool { return b.tools }

// A server's prompts (or resources) change while the exposed tools do not:
// a Refresh still brings the server's view in line, and its sessions, of
// either generation, hear prompts/list_changed then, not at some later
// request.
func TestAServersViewFollowsItsPromptsWhenNoToolChanged(t *testing.T) {
	key := events.NewKey("MCPServer", "default", "git")
	init := initResult("git-server", "")
	init.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	b := &steadyBackend{viewBackend: &viewBackend{fakeBackend: &fakeBackend{call: echo}}, tools: []*mcp.Tool{echoTool("git_log")}}
	b.set(router.ServerOffer{Key: key, Init: init, Tools: []*mcp.Tool{echoTool("log")}, Prompts: []*mcp.Prompt{{Name: "review"}}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	heard := map[string]chan struct{}{}
	for _, version := range []string{newestProtocol, latestLegacy} {
		got := make(chan struct{}, 4)
		heard[version] = got
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { got <- struct{}{} }})
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp/servers/git"},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
	}

	// Both are there: the older client's session, and the newest's
	// subscriptions/listen stream (the go-sdk's client opens it as it
	// connects, and does not wait for its answer).
	require.Eventually(t, func() bool {
		n := 0
		for range srv.servers.get(viewKey{key: key}).srv.Sessions() {
			n++
		}
		return n == 2
	}, 30*time.Second, time.Millisecond)

	b.set(router.ServerOffer{Key: key, Init: init, Tools: b.offer.Tools, Prompts: []*mcp.Prompt{{Name: "review"}, {Name: "triage"}}}, nil)
	srv.Refresh()
	for version, got := range heard {
		assert.Equal(t, struct{}{}, waitFor(t, got, "prompts/list_changed at "+version))
	}
}
