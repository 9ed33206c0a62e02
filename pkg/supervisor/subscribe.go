package supervisor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

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
		if inst.modern() {
			return s.listen(ctx, inst, uri)
		}
		return inst.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// listen subscribes to uri on a 2026-07-28 session, where a subscription
// is a subscriptions/listen stream and the go-sdk's Subscribe returns as
// soon as the stream is asked for, before the server has said yes or no.
// musterd waits for the server's notifications/subscriptions/acknowledged
// naming uri, so that Subscribe keeps its meaning in both generations: it
// returns once the server subscribed, and fails when it did not. A server
// refuses a listen stream with an error on the stream that the go-sdk
// keeps to itself, so a refusal reads as no acknowledgement within
// PingTimeout (or the call's own bound, if shorter); the stream is then
// closed again, and the next Subscribe asks anew.
func (s *Supervisor) listen(ctx context.Context, inst *instance, uri string) error {
	acked, forget := inst.acks.await(uri)
	defer forget()
	if err := inst.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	t := time.NewTimer(s.opts.PingTimeout)
	defer t.Stop()
	select {
	case <-acked:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = inst.session.Unsubscribe(context.WithoutCancel(ctx), &mcp.UnsubscribeParams{URI: uri})
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("the server did not acknowledge the subscription within %s: it refused it, or does not answer", s.opts.PingTimeout)
}

// acks are the subscriptions of a 2026-07-28 session waiting for the
// server's acknowledgement, by URI.
type acks struct {
	mu      sync.Mutex
	waiting map[string][]chan struct{}
}

// await registers a wait for the acknowledgement of uri.
func (a *acks) await(uri string) (acked <-chan struct{}, forget func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[string][]chan struct{}{}
	}
	a.waiting[uri] = append(a.waiting[uri], ch)
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.waiting[uri] = slices.DeleteFunc(a.waiting[uri], func(c chan struct{}) bool { return c == ch })
		if len(a.waiting[uri]) == 0 {
			delete(a.waiting, uri)
		}
	}
}

// acknowledged wakes the waits for the URIs a server acknowledged.
func (a *acks) acknowledged(params *mcp.SubscriptionsAcknowledgedParams) {
	if params == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, uri := range params.Notifications.ResourceSubscriptions {
		for _, ch := range a.waiting[uri] {
			close(ch)
		}
		delete(a.waiting, uri)
	}
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
		// On a 2026-07-28 session this closes the URI's listen stream.
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
