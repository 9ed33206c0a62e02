package mcpserve

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// subscribingViewBackend is a viewBackend that subscribes to a server's
// resources by its own URIs, as the router does, recording each call.
type subscribingViewBackend struct {
	*viewBackend
	smu      sync.Mutex
	subs     []string // "key uri" or "-key uri"
	changed  chan string
	onUpdate func(events.Key, string)
}

func (b *subscribingViewBackend) SubscribeServer(_ context.Context, key events.Key, uri string) error {
	b.record(key.Name + " " + uri)
	return nil
}

func (b *subscribingViewBackend) UnsubscribeServer(_ context.Context, key events.Key, uri string) error {
	b.record("-" + key.Name + " " + uri)
	return nil
}

func (b *subscribingViewBackend) record(what string) {
	b.smu.Lock()
	b.subs = append(b.subs, what)
	b.smu.Unlock()
	b.changed <- what
}

func (b *subscribingViewBackend) OnServerResourceUpdated(fn func(events.Key, string)) func() {
	b.smu.Lock()
	defer b.smu.Unlock()
	b.onUpdate = fn
	return func() {}
}

func (b *subscribingViewBackend) subscribed() []string {
	b.smu.Lock()
	defer b.smu.Unlock()
	return append([]string(nil), b.subs...)
}

// A server's view offers resource subscriptions exactly when its server
// does, and passes them through by the server's own URI: once however
// many of the view's sessions want a resource, until the last unsubscribes
// or ends; the server's updates reach the view's sessions subscribed.
func TestAServersViewPassesSubscriptionsThrough(t *testing.T) {
	git, plain := events.NewKey("MCPServer", "default", "git"), events.NewKey("MCPServer", "default", "plain")
	b := &subscribingViewBackend{viewBackend: &viewBackend{fakeBackend: &fakeBackend{call: echo}}, changed: make(chan string, 8)}
	caps := func(subscribe bool) *mcp.InitializeResult {
		return &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: "s", Version: "1"},
			Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{Subscribe: subscribe, ListChanged: true}}}
	}
	b.set(router.ServerOffer{Key: git, Init: caps(true), Resources: []*mcp.Resource{{URI: "todo", Name: "todo"}}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	connect := func(path string, version ...string) (*mcp.ClientSession, chan string) {
		got := make(chan string, 8)
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { got <- r.Params.URI }})
		opts := &mcp.ClientSessionOptions{}
		if len(version) > 0 {
			opts.ProtocolVersion = version[0]
		}
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + path}, opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs, got
	}
	a, aGot := connect("/mcp/servers/git")
	c, cGot := connect("/mcp/servers/git")
	assert.True(t, a.InitializeResult().Capabilities.Resources.Subscribe, "the server's own capability")

	ctx := context.Background()
	require.NoError(t, a.Subscribe(ctx, &mcp.SubscribeParams{URI: "todo"}))
	require.NoError(t, c.Subscribe(ctx, &mcp.SubscribeParams{URI: "todo"}))
	assert.Equal(t, "git todo", waitFor(t, b.changed, "the subscription at the server"))
	assert.Equal(t, []string{"git todo"}, b.subscribed(), "once for both sessions, by the server's own URI")

	b.smu.Lock()
	update := b.onUpdate
	b.smu.Unlock()
	update(git, "todo")
	assert.Equal(t, "todo", waitFor(t, aGot, "the update in the first session"))
	assert.Equal(t, "todo", waitFor(t, cGot, "the update in the second session"))

	require.NoError(t, a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "todo"}))
	assert.Equal(t, []string{"git todo"}, b.subscribed(), "the other session still wants it")
	require.NoError(t, c.Close())
	assert.Equal(t, "-git todo", waitFor(t, b.changed, "the unsubscribe once the last session ended"))

	// A server that offers no subscriptions: neither does its view. (A
	// client of the older generation hears the refusal: the go-sdk's
	// client of the newest does not wait for its listen stream's answer.)
	b.set(router.ServerOffer{Key: plain, Init: caps(false), Resources: []*mcp.Resource{{URI: "todo", Name: "todo"}}}, nil)
	p, _ := connect("/mcp/servers/plain", latestLegacy)
	assert.False(t, p.InitializeResult().Capabilities.Resources.Subscribe)
	assert.Error(t, p.Subscribe(ctx, &mcp.SubscribeParams{URI: "todo"}))
	assert.Len(t, b.subscribed(), 2)
}
