package mcpserve

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The views' go-sdk servers are reached in the newest protocol (2026-07-28,
// SEP-2575) over a transport that serves it: the in-memory one here, as
// stdio would, or a go-sdk whose stateful streamable handler serves it
// one day. The endpoint's transports do not yet (versions_test.go). In that
// protocol a go-sdk client's Subscribe opens a subscriptions/listen stream
// for the URI and returns once it is sent, not answered; the go-sdk server
// calls the views' subscribe handler for each URI the stream names, and
// their unsubscribe handler when the stream ends (the client's Unsubscribe
// cancels it), with the stream's context, done by then. A client hears of
// list changes only while a listen stream that opted in is open: a go-sdk
// client opens one as it connects when it has a handler for them.

// listenSetup serves the views of a new Server over in-memory transports.
type listenSetup struct {
	srv *Server
	sb  *subscribingBackend
}

func newListenSetup(t *testing.T, uri string) *listenSetup {
	sb := &subscribingBackend{fakeBackend: &fakeBackend{call: echo, resources: []*mcp.Resource{{URI: uri, Name: "notes"}}}, unsubscribed: make(chan string, 4)}
	srv, err := New(Options{Backend: sb, Logger: quiet()})
	require.NoError(t, err)
	return &listenSetup{srv: srv, sb: sb}
}

// connect starts a session on view at version ("" is the go-sdk client's
// default, the newest).
func (l *listenSetup) connect(t *testing.T, view *mcp.Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	_, err := view.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	want := version
	if want == "" {
		want = newestProtocol
	}
	require.Equal(t, want, cs.InitializeResult().ProtocolVersion)
	return cs
}

func (l *listenSetup) subscribed() []string {
	l.sb.mu.Lock()
	defer l.sb.mu.Unlock()
	return append([]string(nil), l.sb.subscribed...)
}

func (l *listenSetup) recorded(uri string) int {
	l.srv.subs.mu.Lock()
	defer l.srv.subs.mu.Unlock()
	return len(l.srv.subs.sessions[subject{uri: uri}])
}

// unsubscribes drains the unsubscribes made at the server so far.
func (l *listenSetup) unsubscribes() []string { return drain(l.sb.unsubscribed) }

// drain receives what ch holds now.
func drain[T any](ch chan T) []T {
	var got []T
	for len(ch) > 0 {
		got = append(got, <-ch)
	}
	return got
}

func TestListenSubscriptionsOfTheNewestProtocolAreCountedWithTheOthers(t *testing.T) {
	const uri = "file:///notes.md"
	updates := func() (*mcp.ClientOptions, chan string) {
		ch := make(chan string, 4)
		return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { ch <- r.Params.URI }}, ch
	}

	t.Run("sessions unsubscribing, the last one releases the server's subscription", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newListenSetup(t, uri)
			aOpts, aGot := updates()
			bOpts, bGot := updates()
			oOpts, oGot := updates()
			a := l.connect(t, l.srv.direct, "", aOpts)
			b := l.connect(t, l.srv.meta, "", bOpts)
			old := l.connect(t, l.srv.direct, latestLegacy, oOpts) // beside them, a session of the older protocol

			require.NoError(t, a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
			require.NoError(t, b.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
			require.NoError(t, old.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
			synctest.Wait() // the listens are sent, not answered, when Subscribe returns
			assert.Equal(t, []string{uri}, l.subscribed(), "subscribed at the server once")
			assert.Equal(t, 3, l.recorded(uri))

			l.sb.update(uri)
			synctest.Wait()
			for _, got := range []chan string{aGot, bGot, oGot} {
				require.Len(t, got, 1)
				assert.Equal(t, uri, <-got)
			}

			require.NoError(t, a.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
			require.NoError(t, old.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
			synctest.Wait()
			assert.Empty(t, l.unsubscribes(), "b still wants it")
			assert.Equal(t, 1, l.recorded(uri))

			require.NoError(t, b.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
			synctest.Wait()
			assert.Equal(t, []string{uri}, l.unsubscribes(), "unsubscribed at the server once, when the last session went")
			assert.Zero(t, l.recorded(uri))
			l.sb.update(uri)
			synctest.Wait()
			assert.Empty(t, aGot, "an unsubscribed session hears nothing more")
			assert.Empty(t, bGot)
		})
	})

	t.Run("a session that ends without unsubscribing releases it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newListenSetup(t, uri)
			a := l.connect(t, l.srv.direct, "", nil)
			require.NoError(t, a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
			synctest.Wait()
			require.Equal(t, []string{uri}, l.subscribed())

			require.NoError(t, a.Close())
			synctest.Wait()
			assert.Equal(t, []string{uri}, l.unsubscribes(), "once, though both the stream's end and the session's release it")
			assert.Zero(t, l.recorded(uri))
		})
	})

	t.Run("a subscription the server refuses is not recorded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newListenSetup(t, uri)
			aOpts, aGot := updates()
			a := l.connect(t, l.srv.direct, "", aOpts)
			l.sb.refuseOnce = errors.New(`resource "file:///notes.md": no server offers it`)
			// The go-sdk client does not wait for the stream's answer, so
			// the refusal does not reach the caller in this protocol.
			require.NoError(t, a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
			synctest.Wait()
			assert.Empty(t, l.subscribed())
			assert.Zero(t, l.recorded(uri))
			l.sb.update(uri)
			synctest.Wait()
			assert.Empty(t, aGot)
			assert.Empty(t, l.unsubscribes(), "nothing to release")
		})
	})
}

func TestSessionsOfTheNewestProtocolGetListChangedWhileTheyListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newListenSetup(t, "file:///notes.md")
		heard := func() (*mcp.ClientOptions, chan string) {
			ch := make(chan string, 8)
			return &mcp.ClientOptions{
				ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { ch <- "tools" },
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { ch <- "resources" },
				PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { ch <- "prompts" },
			}, ch
		}
		dOpts, onDirect := heard()
		mOpts, onMeta := heard()
		oOpts, onOld := heard()
		l.connect(t, l.srv.direct, "", dOpts) // opens its listen stream as it connects
		l.connect(t, l.srv.meta, "", mOpts)
		l.connect(t, l.srv.direct, latestLegacy, oOpts)
		synctest.Wait()

		l.sb.setTools(echoTool("x_fake_echo"))
		l.sb.mu.Lock()
		l.sb.fakeBackend.mu.Lock()
		l.sb.resources = append(l.sb.resources, &mcp.Resource{URI: "file:///todo.md", Name: "todo"})
		l.sb.prompts = []*mcp.Prompt{{Name: "greet"}}
		l.sb.fakeBackend.mu.Unlock()
		l.sb.mu.Unlock()
		require.True(t, l.srv.Refresh())
		time.Sleep(time.Second) // past the go-sdk's 10 ms batching, in virtual time
		synctest.Wait()
		assert.ElementsMatch(t, []string{"tools", "resources", "prompts"}, drain(onDirect), "/mcp/direct, newest protocol")
		assert.ElementsMatch(t, []string{"resources", "prompts"}, drain(onMeta), "/mcp, newest protocol: its meta-tools stay")
		assert.ElementsMatch(t, []string{"tools", "resources", "prompts"}, drain(onOld), "/mcp/direct, older protocol")
	})
}
