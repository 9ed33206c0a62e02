package mcpserve

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/musterevents"
)

const (
	// defaultEventLimit is core_events' default limit, muster's.
	defaultEventLimit = 50
	// eventNotification is the method of a followed event, muster's.
	eventNotification = "notifications/muster/event"
)

// EventLog is what core_events reads: muster's view of the events
// (musterevents.Log).
type EventLog interface {
	Query(ctx context.Context, f musterevents.Filter, limit int) []musterevents.Event
	Follow(ctx context.Context, f musterevents.Filter, fn func(musterevents.Event)) (stop func(), dropped func() uint64)
}

// parseTime reads a time filter: a duration back from now ("1h"), RFC3339,
// a date, or a date and time.
func parseTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02", musterevents.TimeLayout} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (1h, 30m) nor a time (RFC3339, 2006-01-02, or 2006-01-02 15:04:05)", s)
}

// coreEvents lists muster's events, newest first, as muster does; with
// follow, it also streams the later ones to the session.
func (s *Server) coreEvents(ctx context.Context, a args) (*mcp.CallToolResult, error) {
	q := musterevents.Filter{Name: a.str("resourceName"), Namespace: a.str("namespace"), Type: a.str("eventType")}
	if k := a.str("resourceType"); k != "" {
		// muster compares the kind as given: a type it does not know
		// matches nothing. musterd also takes the kinds' aliases.
		q.Kind = k
		if kind, err := types.ResolveKind(k); err == nil {
			q.Kind = kind.Name
		}
	}
	now := time.Now()
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := a.str(f.name); v != "" {
			t, err := parseTime(v, now)
			if err != nil {
				return errorResult(fmt.Sprintf("Invalid '%s' time format: %v", f.name, err)), nil
			}
			*f.dst = t
		}
	}
	limit := a.integer("limit", defaultEventLimit)
	if limit < 1 {
		limit = defaultEventLimit
	}
	if a.boolean("follow", false) {
		if err := s.follow(ctx, q); err != nil {
			return errorResult("core_events: follow: " + err.Error()), nil
		}
	}
	list := []musterevents.View{}
	if s.opts.Events != nil {
		for _, e := range s.opts.Events.Query(ctx, q, limit) {
			list = append(list, e.View())
		}
	}
	return jsonResult(list)
}

// follows are the event follows of sessions, and the open GET streams of
// the streamable sessions that their notifications are written to.
type follows struct {
	n      atomic.Uint64
	mu     sync.Mutex
	sinks  map[string]*sink              // session ID → its standalone stream
	active map[string]context.CancelFunc // session ID → its follow
}

func (f *follows) init() {
	f.sinks = map[string]*sink{}
	f.active = map[string]context.CancelFunc{}
}

// follow streams the events q matches to the calling session, as
// notifications/muster/event on its standalone stream, until the session
// closes or follows again.
func (s *Server) follow(ctx context.Context, q musterevents.Filter) error {
	info := callInfoFrom(ctx)
	session := info.session
	if session == "" && info.serverSession != nil {
		session = s.sseKey(info.serverSession) // sse.go
	}
	if session == "" || info.serverSession == nil {
		return fmt.Errorf("it needs an MCP session with a stream (/mcp, /mcp/direct or /sse); this call has none")
	}
	if s.opts.Events == nil {
		return fmt.Errorf("the daemon's events are not available here")
	}
	f := &s.follows
	n := f.n.Add(1)
	stopCtx, stop := context.WithCancel(context.Background())
	// The log calls this on the follow's own goroutine: a stream slow to
	// write delays this follow alone.
	unfollow, _ := s.opts.Events.Follow(stopCtx, q, func(e musterevents.Event) {
		f.mu.Lock()
		out := f.sinks[session]
		f.mu.Unlock()
		if out == nil {
			return // no stream open: nowhere to say it
		}
		data, err := marshal(map[string]any{"jsonrpc": "2.0", "method": eventNotification, "params": e.View()}, false)
		if err == nil {
			out.inject(data)
		}
	})
	f.mu.Lock()
	if prev := f.active[session]; prev != nil {
		prev()
	}
	f.active[session] = stop
	f.mu.Unlock()
	closed := make(chan struct{})
	go func() {
		_ = info.serverSession.Wait()
		close(closed)
	}()
	go func() {
		select {
		case <-closed:
		case <-stopCtx.Done():
		}
		unfollow()
		f.mu.Lock()
		if f.active[session] != nil && stopCtx.Err() == nil {
			delete(f.active, session)
		}
		f.mu.Unlock()
		stop()
	}()
	s.log.Debug("event follow started", "session", session, "follow", n)
	return nil
}

// sink is a session's standalone SSE stream, through which the go-sdk
// writes its events and the follows theirs. The go-sdk writes each event in
// one Write; sink serializes Writes, so an injected event always falls
// between two of the go-sdk's, never inside one.
type sink struct {
	http.ResponseWriter
	mu     sync.Mutex
	closed bool // the GET has returned: its writer is the server's again
}

func (k *sink) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ResponseWriter.Write(p)
}

func (k *sink) Flush() {
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = http.NewResponseController(k.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (k *sink) Unwrap() http.ResponseWriter { return k.ResponseWriter }

// inject writes one JSON-RPC message as an SSE event.
func (k *sink) inject(msg []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	rc := http.NewResponseController(k.ResponseWriter)
	_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	if _, err := fmt.Fprintf(k.ResponseWriter, "event: message\ndata: %s\n\n", msg); err == nil {
		_ = rc.Flush()
	}
}

// serveStream serves a streamable session's standalone GET stream through
// a sink registered for the follows.
func (s *Server) serveStream(h http.Handler, w http.ResponseWriter, r *http.Request, session string) {
	k := &sink{ResponseWriter: w}
	f := &s.follows
	f.mu.Lock()
	f.sinks[session] = k
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if f.sinks[session] == k {
			delete(f.sinks, session)
		}
		f.mu.Unlock()
		// An injection under way finishes first; none starts after.
		k.mu.Lock()
		k.closed = true
		k.mu.Unlock()
	}()
	h.ServeHTTP(k, r)
}
