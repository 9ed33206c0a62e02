package supervisor

import (
	"context"

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
		if !subscribable(inst) {
			return nil
		}
		return inst.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// subscribable reports whether inst's server offers resource
// subscriptions; Subscribe and Unsubscribe are a no-op for one that does
// not.
func subscribable(inst *instance) bool {
	caps := inst.capabilities()
	return caps != nil && caps.Resources != nil && caps.Resources.Subscribe
}

// Unsubscribe undoes Subscribe.
func (s *Supervisor) Unsubscribe(ctx context.Context, key events.Key, uri string) error {
	return s.call(ctx, key, "resources/unsubscribe "+uri, func(ctx context.Context, inst *instance) error {
		if !subscribable(inst) {
			return nil
		}
		return inst.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// Session identifies the session of key's running server: a number that
// is another whenever the server has a new session (it started again,
// after a crash, a changed spec or a remote's expired session), and the
// same while the session lasts. ok is false when it does not run. A
// caller that subscribed on one session tells by it that the server has
// none of its subscriptions now.
func (s *Supervisor) Session(key events.Key) (id uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	if e == nil || e.inst == nil || !e.obs.Running() {
		return 0, false
	}
	return e.inst.seq, true
}

// WatchResourceUpdates calls fn for every notifications/resources/updated
// a running server sends, with the server's key and its own URI. fn runs
// on the session's goroutine: it must not block. The returned func ends
// the registration.
func (s *Supervisor) WatchResourceUpdates(fn func(key events.Key, uri string)) (cancel func()) {
	return s.updates.Add(fn)
}

// resourceUpdated tells the watchers that key's server says uri changed.
func (s *Supervisor) resourceUpdated(key events.Key, uri string) {
	for _, fn := range s.updates.All() {
		fn(key, uri)
	}
}
