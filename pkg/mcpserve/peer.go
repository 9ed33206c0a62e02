//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package mcpserve

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/peer"
)

// A client session, as the managed servers see it: a peer.Peer. Every
// tool call carries its own (enter), bound to the call, so that what a
// server asks while it handles the call (a sampling, an elicitation, the
// roots) and what it logs reach this client on the call's own stream:
// the go-sdk sends a request made with the call's context on the stream
// of the request that call answers. The supervisor decides which server
// session serves the client (its lanes); this file only delivers.

// client is one client session of any view.
type client struct {
	ss   *mcp.ServerSession
	id   string
	done <-chan struct{}

	mu      sync.Mutex
	level   mcp.LoggingLevel
	roots   uint64
	changed chan struct{}
}

// clientIDs numbers the SSE sessions, whose ID the go-sdk leaves empty.
var clientIDs atomic.Uint64

// clientOf returns ss's client, made at its first use.
func (s *Server) clientOf(ss *mcp.ServerSession) *client {
	if c, ok := s.clients.Load(ss); ok {
		return c.(*client)
	}
	closed := s.sessionClosed(ss)
	id := ss.ID()
	if id == "" {
		id = "sse-" + strconv.FormatUint(clientIDs.Add(1), 10)
	}
	nc := &client{ss: ss, id: id, done: closed.Done(), changed: make(chan struct{})}
	c, loaded := s.clients.LoadOrStore(ss, nc)
	if !loaded {
		context.AfterFunc(closed, func() { s.clients.CompareAndDelete(ss, nc) })
	}
	return c.(*client)
}

// trackClients is the receiving middleware of every view that notes a
// client's logging/setLevel and notifications/roots/list_changed, for the
// servers' sessions on its behalf (peer.Peer.Changed). The go-sdk keeps the
// level itself, and Log filters by it.
func (s *Server) trackClients(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return res, err
		}
		switch method {
		case "logging/setLevel":
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				s.clientOf(ss).change(func(c *client) { c.level = p.Level })
			}
		case "notifications/roots/list_changed":
			s.clientOf(ss).change(func(c *client) { c.roots++ })
		}
		return res, err
	}
}

func (c *client) change(f func(*client)) {
	c.mu.Lock()
	f(c)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *client) ID() string            { return c.id }
func (c *client) Done() <-chan struct{} { return c.done }
func (c *client) Session() peer.Peer    { return c }

func (c *client) Capabilities() *mcp.ClientCapabilities {
	if p := c.ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

func (c *client) LogLevel() mcp.LoggingLevel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.level
}

func (c *client) RootsChanges() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots
}

func (c *client) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *client) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return c.ss.CreateMessageWithTools(ctx, p)
}

func (c *client) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return c.ss.Elicit(ctx, p)
}

func (c *client) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return c.ss.ListRoots(ctx, p)
}

func (c *client) NotifyElicitationComplete(ctx context.Context, p *mcp.ElicitationCompleteParams) error {
	return c.ss.NotifyElicitationComplete(ctx, p)
}

func (c *client) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	return c.ss.Log(ctx, p)
}

// boundClient is a client bound to one of its calls: what it is asked
// travels on the call's stream, and is cancelled when either the call or
// the server's request ends.
type boundClient struct {
	*client
	call context.Context
}

// on returns a context with the call's values (the go-sdk finds the call's
// stream there) that ends when ctx or the call does.
func (b boundClient) on(ctx context.Context) (context.Context, context.CancelFunc) {
	merged, cancel := context.WithCancelCause(context.WithoutCancel(b.call))
	stopCtx := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	stopCall := context.AfterFunc(b.call, func() { cancel(context.Cause(b.call)) })
	return merged, func() {
		stopCtx()
		stopCall()
		cancel(nil)
	}
}

func (b boundClient) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	ctx, done := b.on(ctx)
	defer done()
	return b.client.CreateMessage(ctx, p)
}

func (b boundClient) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ctx, done := b.on(ctx)
	defer done()
	return b.client.Elicit(ctx, p)
}

func (b boundClient) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	ctx, done := b.on(ctx)
	defer done()
	return b.client.ListRoots(ctx, p)
}

// Log sends a server's log message on the call's stream while the call
// runs, and on the session's own stream once it has returned. The two
// race: the server's response overtakes the messages it sent before it
// (the go-sdk hands a response to its caller at once, and notifications
// to their handler in turn), so the call's stream can close between the
// check and the write. The go-sdk then rejects the write, sending nothing,
// and the message takes the session's stream instead.
func (b boundClient) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	if b.call.Err() == nil {
		callCtx, done := b.on(ctx)
		err := b.client.Log(callCtx, p)
		done()
		if !rejectedByTransport(err) {
			return err
		}
	}
	return b.client.Log(ctx, p)
}

// codeRejectedByTransport is the code of the go-sdk's error for a write
// its transport refused before sending anything (jsonrpc2.ErrRejected,
// which the go-sdk does not export): a stream that has closed, say.
const codeRejectedByTransport = -32005

func rejectedByTransport(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code == codeRejectedByTransport
}
