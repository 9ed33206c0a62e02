package mcpserve

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subscribingBackend is a fakeBackend that records subscriptions and
// sends updates when the test says. A call with its context done fails,
// as the router's call at a server does.
type subscribingBackend struct {
	*fakeBackend
	mu           sync.Mutex
	subscribed   []string
	unsubscribed chan string
	onUpdate     func(string)
	refuseOnce   error
}

func (b *subscribingBackend) Subscribe(ctx context.Context, uri string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.refuseOnce; err != nil {
		b.refuseOnce = nil
		return err
	}
	b.subscribed = append(b.subscribed, uri)
	return nil
}

func (b *subscribingBackend) Unsubscribe(ctx context.Context, uri string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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

// newSubscribingHarness serves an endpoint whose Backend subscribes, and
// offers the resource uri.
func newSubscribingHarness(t *testing.T, uri string) (*harness, *subscribingBackend) {
	var sb *subscribingBackend
	h := newHarness(t, func(o *setup) {
		sb = &subscribingBackend{fakeBackend: o.Backend.(*fakeBackend), unsubscribed: make(chan string, 4)}
		o.Backend = sb
	})
	sb.resources = []*mcp.Resource{{URI: uri, Name: "notes"}}
	h.srv.Refresh()
	return h, sb
}

func TestResourceSubscriptionsAreCountedAcrossSessionsAndUpdatesForwarded(t *testing.T) {
	const uri = "file:///notes.md"
	h, sb := newSubscribingHarness(t, uri)
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

// gatedSubscriber is a ResourceSubscriber that keeps whether each URI is
// subscribed at "the server", and can hold a Subscribe or Unsubscribe at a
// gate until the test opens it: the call's effect lands when it returns,
// as a server's answer does, and a call whose context ended meanwhile
// fails, as the router's does.
type gatedSubscriber struct {
	*fakeBackend
	mu                 sync.Mutex
	subscribed         map[string]bool
	subscribes         int
	holdSub, holdUnsub chan struct{} // nil: not held
	heldURI            string        // "": every URI's calls are held
}

func (g *gatedSubscriber) Subscribe(ctx context.Context, uri string) error {
	g.wait(uri, g.holdSub)
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subscribed[uri] = true
	g.subscribes++
	return nil
}

func (g *gatedSubscriber) Unsubscribe(ctx context.Context, uri string) error {
	g.wait(uri, g.holdUnsub)
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subscribed[uri] = false
	return nil
}

func (g *gatedSubscriber) wait(uri string, gate chan struct{}) {
	if gate != nil && (g.heldURI == "" || g.heldURI == uri) {
		<-gate
	}
}

func (g *gatedSubscriber) OnResourceUpdated(func(string)) func() { return func() {} }

func (g *gatedSubscriber) state(uri string) (subscribed bool, subscribes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.subscribed[uri], g.subscribes
}

// TestSubscriptionsOfOneURIAreSerialisedWithTheirServerCalls forces, at
// gates, the interleavings in which a session's subscribe meets another's
// server call for the same URI; synctest.Wait lets each call go as far as
// it can before the gate opens. Both must end with the server subscribed
// exactly when a session is recorded, and subscribed once.
func TestSubscriptionsOfOneURIAreSerialisedWithTheirServerCalls(t *testing.T) {
	const uri = "file:///notes.md"
	setup := func(t *testing.T) (*Server, *gatedSubscriber, func() *mcp.ClientSession) {
		g := &gatedSubscriber{fakeBackend: &fakeBackend{call: echo, resources: []*mcp.Resource{{URI: uri, Name: "notes"}}},
			subscribed: map[string]bool{}}
		srv, err := New(Options{Backend: g, Logger: quiet()})
		require.NoError(t, err)
		connect := func() *mcp.ClientSession {
			st, ct := mcp.NewInMemoryTransports()
			_, err := srv.direct.Connect(t.Context(), st, nil)
			require.NoError(t, err)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		return srv, g, connect
	}
	recorded := func(srv *Server) int {
		srv.subs.mu.Lock()
		defer srv.subs.mu.Unlock()
		return len(srv.subs.sessions[subject{uri: uri}])
	}
	async := func(f func() error) chan error {
		done := make(chan error, 1)
		go func() { done <- f() }()
		return done
	}
	sub := func(cs *mcp.ClientSession) func() error {
		return func() error { return cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}) }
	}

	t.Run("a subscribe while the last one is being unsubscribed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, g, connect := setup(t)
			a, b := connect(), connect()
			require.NoError(t, a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))

			gate := make(chan struct{})
			g.holdUnsub = gate
			unsubscribed := async(func() error { return a.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}) })
			synctest.Wait() // a's unsubscribe is at the server, held
			subscribed := async(sub(b))
			synctest.Wait() // b's subscribe has gone as far as it can
			close(gate)
			require.NoError(t, <-unsubscribed)
			require.NoError(t, <-subscribed)

			on, _ := g.state(uri)
			assert.Equal(t, 1, recorded(srv), "b is recorded")
			assert.True(t, on, "so the server must be subscribed")
		})
	})

	t.Run("an unsubscribe cancelled while at the server still releases it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, g, connect := setup(t)
			a := connect()
			require.NoError(t, a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))

			gate := make(chan struct{})
			g.holdUnsub = gate
			ctx, cancel := context.WithCancel(context.Background())
			unsubscribed := async(func() error { return a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}) })
			synctest.Wait() // a's unsubscribe is at the server, held
			cancel()
			synctest.Wait() // the cancellation has reached musterd
			close(gate)
			require.ErrorIs(t, <-unsubscribed, context.Canceled)
			synctest.Wait()

			on, _ := g.state(uri)
			assert.Zero(t, recorded(srv), "a is not recorded")
			assert.False(t, on, "so the server must not be subscribed")
		})
	})

	t.Run("two first subscribes at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, g, connect := setup(t)
			a, b := connect(), connect()

			gate := make(chan struct{})
			g.holdSub = gate
			first := async(sub(a))
			synctest.Wait() // a's subscribe is at the server, held
			second := async(sub(b))
			synctest.Wait()
			close(gate)
			require.NoError(t, <-first)
			require.NoError(t, <-second)

			on, n := g.state(uri)
			assert.Equal(t, 2, recorded(srv))
			assert.True(t, on)
			assert.Equal(t, 1, n, "subscribed at the server once")
		})
	})
	t.Run("a slow server holds up its own URI only, and a waiting subscribe ends with its request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, g, connect := setup(t)
			a, b := connect(), connect()

			gate := make(chan struct{})
			g.holdSub, g.heldURI = gate, uri
			held := async(sub(a))
			synctest.Wait() // a's subscribe is at the server, held

			const other = "file:///other.md"
			require.NoError(t, b.Subscribe(context.Background(), &mcp.SubscribeParams{URI: other}), "another URI is not held up")
			ctx, cancel := context.WithCancel(context.Background())
			waiting := async(func() error { return b.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) })
			synctest.Wait() // b waits for uri's turn
			cancel()
			require.ErrorIs(t, <-waiting, context.Canceled)
			synctest.Wait() // b's request has ended at the server too

			close(gate)
			require.NoError(t, <-held)
			assert.Equal(t, 1, recorded(srv), "a only: b's cancelled subscribe is not recorded")
			assert.Zero(t, srv.subs.turns.Len(), "no turn is left behind")
		})
	})
}
