package mcpserve

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subscribingBackend is a fakeBackend that records subscriptions and
// sends updates when the test says.
type subscribingBackend struct {
	*fakeBackend
	mu           sync.Mutex
	subscribed   []string
	unsubscribed chan string
	onUpdate     func(string)
	refuseOnce   error
}

func (b *subscribingBackend) Subscribe(_ context.Context, uri string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refuseOnce; err != nil {
		b.refuseOnce = nil
		return err
	}
	b.subscribed = append(b.subscribed, uri)
	return nil
}

func (b *subscribingBackend) Unsubscribe(_ context.Context, uri string) error {
	b.unsubscribed <- uri
	return nil
}

func (b *subscribingBackend) OnResourceUpdated(fn func(string)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onUpdate = fn
	return func() {}
}

func (b *subscribingBackend) update(uri string) {
	b.mu.Lock()
	fn := b.onUpdate
	b.mu.Unlock()
	fn(uri)
}

func TestResourceSubscriptionsAreCountedAcrossSessionsAndUpdatesForwarded(t *testing.T) {
	var sb *subscribingBackend
	h := newHarness(t, func(o *Options) {
		sb = &subscribingBackend{fakeBackend: o.Backend.(*fakeBackend), unsubscribed: make(chan string, 4)}
		o.Backend = sb
	})
	const uri = "file:///notes.md"
	sb.resources = []*mcp.Resource{{URI: uri, Name: "notes"}}
	h.srv.Refresh()
	updates := func() (*mcp.ClientOptions, chan string) {
		ch := make(chan string, 4)
		return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { ch <- r.Params.URI }}, ch
	}
	aOpts, aGot := updates()
	bOpts, bGot := updates()
	a := h.connect(PathDirect, "2025-06-18", aOpts)
	b := h.connect(PathMCP, musterProtocol, bOpts)
	assert.True(t, a.InitializeResult().Capabilities.Resources.Subscribe, "subscribe advertised on /mcp/direct")
	assert.True(t, b.InitializeResult().Capabilities.Resources.Subscribe, "and on muster's view")

	// The backend refuses: the client hears why, and nothing is recorded.
	sb.refuseOnce = errors.New(`resource "file:///notes.md": no server offers it`)
	err := a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no server offers it")

	// Two sessions, on both views: one subscription at the server.
	require.NoError(t, a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
	require.NoError(t, b.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
	sb.mu.Lock()
	assert.Equal(t, []string{uri}, sb.subscribed)
	sb.mu.Unlock()

	sb.update(uri)
	assert.Equal(t, uri, waitFor(t, aGot, "the update on /mcp/direct"))
	assert.Equal(t, uri, waitFor(t, bGot, "the update on /mcp"))

	// One unsubscribes: the other still wants it. The other's session
	// ends without unsubscribing: nobody wants it, so musterd unsubscribes.
	require.NoError(t, a.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
	select {
	case got := <-sb.unsubscribed:
		t.Fatalf("unsubscribed %s while a session still wants it", got)
	default:
	}
	require.NoError(t, b.Close())
	assert.Equal(t, uri, waitFor(t, sb.unsubscribed, "the unsubscribe once the last session ended"))
}
