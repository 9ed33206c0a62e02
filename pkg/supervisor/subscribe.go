package supervisor

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
)

// Subscribe asks key's server to send notifications/resources/updated for
// its resource uri (its own URI, not an exposed one). A server that does
// not offer resource subscriptions is no error: it will send nothing. The
// subscription lasts as long as the server's session: a restarted server
// has none, and its caller subscribes again.
func (s *Supervisor) Subscribe(ctx context.Context, key events.Key, uri string) error {
	return s.call(ctx, key, "resources/subscribe "+uri, func(ctx context.Context, inst *instance) error {
		if caps := inst.capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
			return nil
		}
		return inst.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// Unsubscribe undoes Subscribe.
func (s *Supervisor) Unsubscribe(ctx context.Context, key events.Key, uri string) error {
	return s.call(ctx, key, "resources/unsubscribe "+uri, func(ctx context.Context, inst *instance) error {
		if caps := inst.capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
			return nil
		}
		return inst.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// WatchResourceUpdates calls fn for every notifications/resources/updated
// a running server sends, with the server's key and its own URI. fn runs
// on the session's goroutine: it must not block. The returned func ends
// the registration.
func (s *Supervisor) WatchResourceUpdates(fn func(key events.Key, uri string)) (cancel func()) {
	w := &s.updates
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(events.Key, string){}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

// updateWatchers are the WatchResourceUpdates registrations.
type updateWatchers struct {
	mu   sync.Mutex
	fns  map[int]func(events.Key, string)
	next int
}

// resourceUpdated tells the watchers that key's server says uri changed.
func (s *Supervisor) resourceUpdated(key events.Key, uri string) {
	w := &s.updates
	w.mu.Lock()
	fns := make([]func(events.Key, string), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(key, uri)
	}
}
