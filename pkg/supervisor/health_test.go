package supervisor_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// A remote server that dies is Disconnected when its connection drops, not
// at a ping (the pings here come once an hour) and not after reconnects of
// the SDK's own (up to tens of seconds): a proxy in front of it counts the
// connections to the dead server, and none is attempted before
// Disconnected.
// Reconnects on the backoff
// are Connecting, and Disconnected again while nothing listens; once the
// server is back it is Connected, with no error now, the failures counted
// as failures and no restart. Never Failed: it was reachable, and is again.
func TestARemoteThatDiesIsDisconnectedAtOnceAndConnectedWhenBack(t *testing.T) {
	t.Parallel()
	addr, server := startHTTPFake(t, "-tools", "far")
	u, err := url.Parse(addr)
	require.NoError(t, err)
	proxy := newCountingProxy(t, u.Host)
	// The reconnects (GETs of the event stream) to the dead server tried
	// by the time the supervisor reported the drop. (Closing the session
	// tries a DELETE, which does not count.)
	var atDrop atomic.Int64
	atDrop.Store(-1)
	h := newHarness(t, supervisor.Options{PingInterval: time.Hour, RestartBackoff: supervisor.Backoff{Base: 100 * time.Millisecond},
		OnChangeSync: func(_ events.Key, o supervisor.Observed) {
			if o.State == disconnected {
				atDrop.CompareAndSwap(-1, proxy.refused.Load())
			}
		}})
	k := key("dies")
	spec := remote(v1alpha1.MCPServerTypeStreamableHTTP, "http://"+proxy.addr+u.Path)
	require.Equal(t, connected, h.ensure(t, k, spec).State)

	require.NoError(t, server.Process.Kill())
	gone := h.rec.waitFor(t, k, "disconnected", func(o supervisor.Observed) bool { return o.State == disconnected })
	assert.Zero(t, atDrop.Load(), "noticed as the stream dropped: no reconnect tried first")
	assert.NotEmpty(t, gone.LastError)
	assert.Equal(t, gone.LastError, gone.LastFailure)
	assert.Empty(t, gone.Tools)

	// A reconnect while nothing listens: refused, still Disconnected.
	refused := ensureUntilStarted(t, h, k, spec)
	assert.Equal(t, disconnected, refused.State)
	assert.Equal(t, 2, refused.ConsecutiveFailures)

	startHTTPFake(t, "-http", u.Host, "-tools", "far") // the same address again
	back := ensureUntilStarted(t, h, k, spec)
	for back.State != connected { // refused while it came up: the backoff again
		back = ensureUntilStarted(t, h, k, spec)
	}
	assert.Empty(t, back.LastError, "Connected: no error now")
	assert.NotEmpty(t, back.LastFailure, "the past failure is kept")
	assert.GreaterOrEqual(t, back.ConsecutiveFailures, 2, "the failures counted as failures")
	assert.Zero(t, back.RestartCount, "a reconnect is no restart")
	assert.Equal(t, []string{"far"}, back.Tools)
	for _, o := range h.rec.of(k) {
		assert.NotEqual(t, failed, o.State)
	}
}

// A remote that restarted answers the old session ID with 404. The
// supervisor initializes a new session (Connecting, Connected) without a
// failure: not Failed, not Disconnected, no backoff.
func TestAnExpiredRemoteSessionIsRenewedWithoutFailing(t *testing.T) {
	t.Parallel()
	newHandler := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			server := mcp.NewServer(&mcp.Implementation{Name: "restartable", Version: "v1"}, nil)
			mcp.AddTool(server, &mcp.Tool{Name: "work"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			return server
		}, nil)
	}
	var current atomic.Pointer[http.Handler]
	first := newHandler()
	current.Store(&first)
	httpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(httpServer.Close)
	h := newHarness(t, supervisor.Options{PingInterval: 50 * time.Millisecond, RestartBackoff: supervisor.Backoff{Base: time.Hour}})
	k := key("renewed")
	obs := h.ensure(t, k, remote(v1alpha1.MCPServerTypeStreamableHTTP, httpServer.URL))
	require.Equal(t, connected, obs.State)

	// "Restart": a new handler, which knows no session. (The old one keeps
	// the open standalone stream, as a proxy in front of a restarted
	// server may.)
	second := newHandler()
	current.Store(&second)
	// After the first session's attempt: the Connecting asked for before
	// it has none, and would match "not equal".
	renewing := h.rec.waitFor(t, k, "connecting again", func(o supervisor.Observed) bool {
		return o.State == v1alpha1.MCPServerStateConnecting && o.LastAttempt.After(obs.LastAttempt)
	})
	assert.True(t, renewing.Replacing, "the renewal is a replacement under way: its tools stay offered")
	again := h.rec.waitFor(t, k, "connected again", func(o supervisor.Observed) bool {
		return o.State == connected && o.LastAttempt.After(obs.LastAttempt)
	})
	assert.False(t, again.Replacing, "the new session's Connected is not marked")
	renewed := h.settle(t, k)
	assert.Equal(t, connected, renewed.State)
	assert.Equal(t, []string{"work"}, renewed.Tools)
	assert.Zero(t, renewed.ConsecutiveFailures)
	assert.Empty(t, renewed.LastFailure)
	for _, o := range h.rec.of(k) {
		assert.NotEqual(t, failed, o.State)
		assert.NotEqual(t, disconnected, o.State)
	}
}

// A server that is alive but stops answering fails its ping after the
// ping's timeout, stdio or remote: Failed (hung, not dropped), the process
// killed. Its neighbour is untouched.
func TestAHangingServerFailsItsPingAndItsNeighbourIsUntouched(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{PingInterval: 100 * time.Millisecond, PingTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond})
	neighbour := h.ensure(t, key("neighbour"), fake())
	stdio := h.ensure(t, key("hangs-stdio"), fake("-hang-after", "300ms"))
	addr, _ := startHTTPFake(t, "-hang-after", "300ms")
	h.ensure(t, key("hangs-remote"), remote(v1alpha1.MCPServerTypeStreamableHTTP, addr))

	for _, k := range []string{"hangs-stdio", "hangs-remote"} {
		hung := h.rec.waitFor(t, key(k), "failed", func(o supervisor.Observed) bool { return o.State == failed })
		assert.Equal(t, "health ping failed: no answer within 300ms", hung.LastError, k)
		assert.Equal(t, 1, hung.ConsecutiveFailures, k)
	}
	require.Eventually(t, func() bool { return !processExists(stdio.PID) }, deadline, 5*time.Millisecond, "the hung process is killed")
	still, _ := h.sup.Get(key("neighbour"))
	assert.Equal(t, running, still.State)
	assert.Equal(t, neighbour.PID, still.PID)
	assert.Equal(t, []v1alpha1.MCPServerState{v1alpha1.MCPServerStateStarting, v1alpha1.MCPServerStateStarting, running}, h.rec.states(key("neighbour")))
}

// CallDone: a call that succeeded refreshes LastConnected; one that failed
// in the transport has the server pinged at once, so a server that stopped
// answering fails now, not at its next ping (an hour away here).
func TestCallDoneRefreshesLastConnectedOrPingsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{PingInterval: time.Hour, PingTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond})
	k := key("called")
	obs := h.ensure(t, k, fake())

	h.sup.CallDone(k, nil)
	got, _ := h.sup.Get(k)
	assert.True(t, got.LastConnected.After(obs.LastConnected), "a call answered: last connected now")

	freeze(t, obs.PID)
	h.sup.CallDone(k, errors.New("write |1: broken pipe"))
	frozen := h.rec.waitFor(t, k, "failed", func(o supervisor.Observed) bool { return o.State == failed })
	assert.Equal(t, "health ping after a failed call failed: no answer within 300ms", frozen.LastError)
	h.sup.CallDone(key("unknown"), errors.New("nobody")) // no such server: nothing
}

// countingProxy forwards TCP connections to a backend; a connection whose
// backend cannot be reached is closed once its request's method is read,
// and counted if it is a GET.
type countingProxy struct {
	addr    string
	refused atomic.Int64 // GET requests whose backend could not be reached
}

func newCountingProxy(t *testing.T, backend string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	p := &countingProxy{addr: ln.Addr().String()}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer client.Close()
				server, err := net.Dial("tcp", backend)
				if err != nil {
					_ = client.SetReadDeadline(time.Now().Add(deadline))
					line, _ := bufio.NewReader(client).ReadString(' ')
					if line == "GET " {
						p.refused.Add(1)
					}
					return
				}
				defer server.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
				go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return p
}
