package router

import (
	"context"
	"log/slog"
	"time"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
)

// Caller is who makes a call: the MCP session it came through, when it
// came from a client. The endpoint (package mcpserve) puts it in the
// call's context; a tool that talks back to its caller beyond the result
// (core_events' follow) reads it there. A workflow step's call carries its
// run's caller.
type Caller struct {
	// View is the endpoint's view the call came through: "muster" or
	// "direct". Empty for a call made inside musterd.
	View string
	// Session is the client's session ID ("" for an SSE session, whose
	// ID the client never sees).
	Session string
	// CorrelationID ties the call's log lines and events together.
	CorrelationID string
	// Notify writes a JSON-RPC notification to the session's stream, if it
	// has one open; it reports whether it did. Nil outside a session.
	Notify func(method string, params any) bool
	// Done is closed when the session ends. Nil outside a session.
	Done <-chan struct{}
}

type callerKey struct{}

// WithCaller returns ctx carrying c. A call without a CorrelationID gets
// a new one.
func WithCaller(ctx context.Context, c Caller) context.Context {
	if c.CorrelationID == "" {
		c.CorrelationID = events.NewCorrelationID()
	}
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries, and whether it carries one.
func CallerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// callLog is the one debug line of a call, written when it returns.
type callLog struct {
	tool, source string
	server       string // the managed server, for a server's tool
	serverTool   string // its name at the server
	args         map[string]any
}

func (r *Router) logCall(ctx context.Context, l callLog, result string, took time.Duration, err error) {
	c, _ := CallerOf(ctx)
	attrs := []any{"tool", l.tool, "source", l.source}
	if l.server != "" {
		attrs = append(attrs, "server", l.server, "serverTool", l.serverTool)
	}
	if c.View != "" {
		attrs = append(attrs, "view", c.View, "session", c.Session)
	}
	attrs = append(attrs, "correlation_id", c.CorrelationID, "arguments", redact.ArgsJSON(l.args), "result", result, "duration", took)
	if err != nil {
		attrs = append(attrs, "error", redact.String(err.Error())) // an error may quote a secret
	}
	r.log.DebugContext(ctx, "mcp tool call", attrs...)
}

// debug reports whether a call's line would be written: redacting the
// arguments costs regular expressions, so only then.
func (r *Router) debug(ctx context.Context) bool { return r.log.Enabled(ctx, slog.LevelDebug) }
