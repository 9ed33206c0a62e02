package mcpserve

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// ownersSetup is an endpoint over a real router and catalogue, where the
// test gives owners servers of their own (catalogue.UpdateFor).
func ownersSetup(t *testing.T) (*Server, *catalogue.Catalogue, *router.Router, string) {
	t.Helper()
	cat := catalogue.New(catalogue.Options{})
	rt, err := router.New(router.Options{Catalogue: cat, Servers: noServers{}, Logger: quiet()})
	require.NoError(t, err)
	srv, err := New(Options{Backend: &fakeBackend{call: echo, rt: rt}, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return srv, cat, rt, ts.URL
}

func connectTo(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: musterProtocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// listed is what list_tools answers on cs.
func listed(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	got := decode[struct {
		Tools []struct{ Name string } `json:"tools"`
	}](t, call(t, cs, "list_tools", nil))
	names := []string{}
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// A session's meta-tools list its owner's tools (without a user, the
// session is the owner), and another session's listing has none of them;
// a change of that owner's tools is told to its session alone.
func TestTheMetaToolsListTheCallersOwnToolsAndOnlyItsSessionsAreTold(t *testing.T) {
	srv, cat, rt, url := ownersSetup(t)
	rt.OnOwnerChange(func(owner string) { srv.ToolsChangedFor(owner) })
	changedA, changedB := make(chan struct{}, 8), make(chan struct{}, 8)
	a := connectTo(t, url+PathMCP, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changedA <- struct{}{} }})
	b := connectTo(t, url+PathMCP, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changedB <- struct{}{} }})
	assert.Empty(t, listed(t, a))
	assert.Empty(t, listed(t, b))
	ownerA := "session:" + a.ID()

	cat.UpdateFor(ownerA, events.NewKey("MCPServer", "", "vault"), catalogue.Naming{}, []*mcp.Tool{echoTool("read")}, time.Time{})
	assert.Equal(t, []string{"x_vault_read"}, listed(t, a))
	assert.Empty(t, listed(t, b), "another session's tools are not b's")
	described := call(t, b, "describe_tool", map[string]any{"name": "x_vault_read"})
	assert.True(t, described.IsError, "nor can b describe them")
	assert.Equal(t, "Tool not found: x_vault_read", text(t, described))
	assert.False(t, call(t, a, "describe_tool", map[string]any{"name": "x_vault_read"}).IsError)

	// A's change reaches a's stream once it is open, and never b's.
	deadline := time.Now().Add(10 * time.Second)
	for srv.ToolsChangedFor(ownerA) == 0 {
		require.True(t, time.Now().Before(deadline), "a's stream never opened")
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-changedA:
	case <-time.After(10 * time.Second):
		t.Fatal("a was not told its tools changed")
	}
	assert.Zero(t, srv.ToolsChangedFor("session:nobody"))

	// Through the router: a's tools change again, a is told.
	cat.UpdateFor(ownerA, events.NewKey("MCPServer", "", "vault"), catalogue.Naming{}, []*mcp.Tool{echoTool("read"), echoTool("write")}, time.Time{})
	select {
	case <-changedA:
	case <-time.After(10 * time.Second):
		t.Fatal("a was not told of its change through the router")
	}
	assert.Equal(t, []string{"x_vault_read", "x_vault_write"}, listed(t, a))
	select {
	case <-changedB:
		t.Fatal("b was told of a's change")
	default:
	}
}

// When an owner's last session closes, OnOwnerGone is told, once: what
// was kept for it can go. An owner with a session left is not gone.
func TestAnOwnerWhoseLastSessionClosedIsGone(t *testing.T) {
	gone := make(chan string, 4)
	h := newHarness(t, func(s *setup) {
		s.OnOwnerGone = func(owner string) { gone <- owner }
	})
	h.backend.setTools(echoTool("x_fake_echo"))
	h.srv.Refresh()
	a, b := connectTo(t, h.url+PathDirect, nil), connectTo(t, h.url+PathDirect, nil)
	ownerA := "session:" + a.ID()
	for _, cs := range []*mcp.ClientSession{a, b} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_fake_echo", Arguments: map[string]any{"message": "hi"}})
		require.NoError(t, err)
	}
	require.NoError(t, a.Close())
	select {
	case owner := <-gone:
		assert.Equal(t, ownerA, owner)
	case <-time.After(10 * time.Second):
		t.Fatal("a's owner was never gone")
	}
	select {
	case owner := <-gone:
		t.Fatalf("%s is gone too, with its session open", owner)
	default:
	}
}
