package coretools

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/musterevents"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/tooldef"
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
func (p *Provider) coreEvents(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	q := musterevents.Filter{Name: a.Str("resourceName"), Namespace: a.Str("namespace"), Type: a.Str("eventType")}
	if k := a.Str("resourceType"); k != "" {
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
		if v := a.Str(f.name); v != "" {
			t, err := parseTime(v, now)
			if err != nil {
				return tooldef.Error(fmt.Sprintf("Invalid '%s' time format: %v", f.name, err)), nil
			}
			*f.dst = t
		}
	}
	limit := a.Int("limit", defaultEventLimit)
	if limit < 1 {
		limit = defaultEventLimit
	}
	if a.Bool("follow", false) {
		if err := p.follow(ctx, q); err != nil {
			return tooldef.Error("core_events: follow: " + err.Error()), nil
		}
	}
	list := []musterevents.View{}
	if p.opts.Events != nil {
		for _, e := range p.opts.Events.Query(ctx, q, limit) {
			list = append(list, e.View())
		}
	}
	return tooldef.JSON(list)
}

// follows are the event follows of sessions: one per session, a later
// one replacing it.
type follows struct {
	mu     sync.Mutex
	active map[string]context.CancelFunc // session → its follow's stop
	n      atomic.Uint64
}

// follow streams the events q matches to the calling session, as
// notifications/muster/event on its stream, until the session ends or
// follows again. The log calls back on the follow's own goroutine, so a
// session slow to take its events delays no one else's.
func (p *Provider) follow(ctx context.Context, q musterevents.Filter) error {
	c, ok := router.CallerOf(ctx)
	if !ok || c.Notify == nil || c.Done == nil {
		return fmt.Errorf("it needs an MCP session with a stream (/mcp, /mcp/direct or /sse); this call has none")
	}
	if p.opts.Events == nil {
		return fmt.Errorf("the daemon's events are not available here")
	}
	f := &p.follows
	stopCtx, stop := context.WithCancel(context.Background())
	unfollow, _ := p.opts.Events.Follow(stopCtx, q, func(e musterevents.Event) {
		c.Notify(eventNotification, e.View())
	})
	f.mu.Lock()
	if f.active == nil {
		f.active = map[string]context.CancelFunc{}
	}
	if prev := f.active[c.Session]; prev != nil {
		prev()
	}
	f.active[c.Session] = stop
	f.mu.Unlock()
	go func() {
		select {
		case <-c.Done:
		case <-stopCtx.Done():
		}
		unfollow()
		f.mu.Lock()
		if stopCtx.Err() == nil {
			delete(f.active, c.Session) // the session ended: its follow with it
		}
		f.mu.Unlock()
		stop()
	}()
	p.log.Debug("event follow started", "session", c.Session, "follow", f.n.Add(1))
	return nil
}
