package mcpserve

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errSessionClosed is the cause of a call cancelled because its client
// ended the session.
var errSessionClosed = errors.New("the client ended its MCP session")

// sessionCalls tracks the tool calls in flight per session, so that a
// client ending its session (DELETE) cancels them, and through the
// Backend the servers' calls too. Without it the go-sdk's
// ServerSession.Close waits for the session's calls to finish without
// cancelling them: the DELETE blocks for as long as the longest call runs,
// and the servers work on for nobody.
type sessionCalls struct {
	mu   sync.Mutex
	next uint64
	// calls: session ID → call number → its cancel.
	calls map[string]map[uint64]context.CancelCauseFunc
}

// track returns ctx made cancellable by cancel(session ID), and the func
// the call must run when it returns.
func (c *sessionCalls) track(ctx context.Context, session *mcp.ServerSession) (context.Context, func()) {
	if session == nil || session.ID() == "" {
		return ctx, func() {}
	}
	id := session.ID()
	ctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]map[uint64]context.CancelCauseFunc{}
	}
	if c.calls[id] == nil {
		c.calls[id] = map[uint64]context.CancelCauseFunc{}
	}
	n := c.next
	c.next++
	c.calls[id][n] = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		delete(c.calls[id], n)
		if len(c.calls[id]) == 0 {
			delete(c.calls, id)
		}
		c.mu.Unlock()
		cancel(nil)
	}
}

// cancel cancels every call in flight of the session id.
func (c *sessionCalls) cancel(id string) {
	c.mu.Lock()
	calls := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	for _, cancel := range calls {
		cancel(errSessionClosed)
	}
}

// inFlight is how many calls of session id are running.
func (c *sessionCalls) inFlight(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls[id])
}
