package mcpserve

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
)

const (
	// defaultEventLimit is core_events' default limit, muster's.
	defaultEventLimit = 50
	// eventNotification is the method of a followed event, muster's.
	eventNotification = "notifications/muster/event"
	// eventTimeLayout is how muster shows an event's time.
	eventTimeLayout = "2006-01-02 15:04:05"
	// followBuffer bounds a follow's bus subscription: a session that
	// cannot keep up loses events (counted by the bus), nothing else waits.
	followBuffer = 1024
)

// eventView is an event as muster's core_events shows it.
type eventView struct {
	Timestamp    string `json:"timestamp"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	Namespace    string `json:"namespace"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
	Type         string `json:"type"`
	Count        int    `json:"count,omitempty"`
	at           time.Time
}

// viewOf shows e in muster's terms: its type as the reason, a sentence as
// the message, Warning for failures. Events about no resource are not
// shown.
func viewOf(e events.Event) (eventView, bool) {
	k, ok := e.(events.Keyed)
	if !ok {
		return eventView{}, false
	}
	key := k.ResourceKey().Canonical()
	v := eventView{ResourceType: key.Kind, ResourceName: key.Name, Namespace: key.Namespace,
		Reason: e.EventType(), Type: "Normal", at: e.Metadata().Time}
	v.Timestamp = v.at.Format(eventTimeLayout)
	switch e := e.(type) {
	case events.ResourceChanged:
		v.Message = fmt.Sprintf("definition %s (%s)", e.Operation, e.Source)
	case events.ReconciliationStarted:
		v.Message = fmt.Sprintf("reconcile started, attempt %d", e.Attempt)
	case events.ResourceSynced:
		v.Message = fmt.Sprintf("reconciled in %s", e.Duration.Round(time.Millisecond))
		if e.Deleted {
			v.Message = "deleted: nothing runs for it any more"
		}
	case events.ResourceFailed:
		v.Type = "Warning"
		v.Message = "reconcile failed: " + e.Error
		if e.WillRetry() {
			v.Message += "; retry at " + e.NextRetry.UTC().Format(time.RFC3339)
		}
	case events.StatusSynced:
		v.Message = "status " + e.Category
	case events.StatusSyncFailed:
		v.Type = "Warning"
		v.Message = "status write failed: " + e.Error
	case events.ServiceStateChanged:
		v.Message = "server " + strings.TrimPrefix(e.PreviousState+" → ", " → ") + e.State
		if e.Error != "" {
			v.Type = "Warning"
			v.Message += ": " + e.Error
		}
	default:
		v.Message = e.EventType()
	}
	v.Message = redact.String(v.Message)
	return v, true
}

// eventQuery is core_events' filter.
type eventQuery struct {
	kind, name, namespace, typ string
	since, until               time.Time
}

func (q eventQuery) match(v eventView) bool {
	return (q.kind == "" || v.ResourceType == q.kind) &&
		(q.name == "" || v.ResourceName == q.name) &&
		(q.namespace == "" || v.Namespace == q.namespace) &&
		(q.typ == "" || strings.EqualFold(v.Type, q.typ)) &&
		(q.since.IsZero() || !v.at.Before(q.since)) &&
		(q.until.IsZero() || !v.at.After(q.until))
}

// parseTime reads a time filter: a duration back from now ("1h"), RFC3339,
// a date, or a date and time.
func parseTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02", eventTimeLayout} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (1h, 30m) nor a time (RFC3339, 2006-01-02, or 2006-01-02 15:04:05)", s)
}

func (s *Server) coreEvents(ctx context.Context, a args) (*mcp.CallToolResult, error) {
	q := eventQuery{name: a.str("resourceName"), namespace: a.str("namespace"), typ: a.str("eventType")}
	if k := a.str("resourceType"); k != "" {
		kind, err := types.ResolveKind(k)
		if err != nil {
			return errorResult("core_events: resourceType: " + err.Error()), nil
		}
		q.kind = kind.Name
	}
	now := time.Now()
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.since}, {"until", &q.until}} {
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
	list := []eventView{}
	if s.opts.History != nil {
		for _, ev := range s.opts.History.All() {
			if v, ok := viewOf(ev); ok && q.match(v) {
				list = append(list, v)
			}
		}
	}
	// In the order recorded, which is the order published; sorted by time
	// too, as a clock stepped back may have put them out of it.
	slices.SortStableFunc(list, func(x, y eventView) int { return x.at.Compare(y.at) })
	if len(list) > limit {
		list = list[len(list)-limit:]
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
func (s *Server) follow(ctx context.Context, q eventQuery) error {
	info := callInfoFrom(ctx)
	session := info.session
	if session == "" && info.serverSession != nil {
		session = s.sseKey(info.serverSession) // sse.go
	}
	if session == "" || info.serverSession == nil {
		return fmt.Errorf("it needs an MCP session with a stream (/mcp, /mcp/direct or /sse); this call has none")
	}
	if s.opts.Bus == nil {
		return fmt.Errorf("the daemon's event bus is not available here")
	}
	f := &s.follows
	name := fmt.Sprintf("mcp-follow-%d", f.n.Add(1))
	sub, err := s.opts.Bus.Subscribe(bus.SubscriberOptions{
		Name:     name,
		Delivery: bus.Lossy(followBuffer),
		Handlers: []bus.Handler{bus.On(func(e events.Event) {
			v, ok := viewOf(e)
			if !ok || !q.match(v) {
				return
			}
			f.mu.Lock()
			out := f.sinks[session]
			f.mu.Unlock()
			if out == nil {
				return // no stream open: nowhere to say it
			}
			data, err := marshal(map[string]any{"jsonrpc": "2.0", "method": eventNotification, "params": v}, false)
			if err == nil {
				out.inject(data)
			}
		})},
	})
	if err != nil {
		return err
	}
	stopCtx, stop := context.WithCancel(context.Background())
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
		sub.Unsubscribe()
		f.mu.Lock()
		if f.active[session] != nil && stopCtx.Err() == nil {
			delete(f.active, session)
		}
		f.mu.Unlock()
		stop()
	}()
	s.log.Debug("event follow started", "session", session, "subscriber", name)
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
