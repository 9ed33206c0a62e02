package router

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/musterd/musterd/internal/registry"
	"github.com/musterd/musterd/pkg/events"
)

// resourceSubscriber is what the router needs of its Servers to forward
// resource subscriptions; *supervisor.Supervisor has it.
type resourceSubscriber interface {
	Subscribe(ctx context.Context, key events.Key, uri string) error
	Unsubscribe(ctx context.Context, key events.Key, uri string) error
	WatchResourceUpdates(fn func(key events.Key, uri string)) (cancel func())
	// Session identifies key's server's session: subscriptions last as
	// long as it does.
	Session(key events.Key) (id uint64, ok bool)
}

// ErrSubscriptionsUnsupported is returned by Subscribe when the Servers
// cannot subscribe to a server's resources.
var ErrSubscriptionsUnsupported = errors.New("resource subscriptions are not supported here")

// subscriptions are the exposed resources subscribed to, each at the
// server that offers it, and the watchers of their updates.
type subscriptions struct {
	once  sync.Once
	mu    sync.Mutex
	byURI map[string]route // exposed URI → the server and its own URI
	// renewed is each server's session its subscriptions were last
	// renewed on (or found on, before any): resubscribe renews them on
	// another only.
	renewed map[events.Key]uint64
	fns     registry.Funcs[func(uri string)]
}

// Subscribe subscribes to the exposed resource uri at the server that
// offers it, which then sends notifications/resources/updated for it; the
// OnResourceUpdated watchers get them under the exposed URI. A server
// started again is subscribed again once it has been listed. A URI no
// running server offers, even when listed again, fails with
// ErrUnknownResource. Subscribing twice is subscribing once.
func (r *Router) Subscribe(ctx context.Context, uri string) error {
	sub, ok := r.servers.(resourceSubscriber)
	if !ok {
		return ErrSubscriptionsUnsupported
	}
	// The servers' updates are watched from the first subscription on.
	r.subs.once.Do(func() { sub.WatchResourceUpdates(r.resourceUpdated) })
	to, ok := r.listings.snapshot().resolveURI(uri)
	if !ok {
		if err := r.relistAll(ctx); err != nil {
			return err
		}
		if to, ok = r.listings.snapshot().resolveURI(uri); !ok {
			return fmt.Errorf("resource %q: %w", uri, ErrUnknownResource)
		}
	}
	r.subs.mu.Lock()
	if r.subs.byURI == nil {
		r.subs.byURI = map[string]route{}
	}
	r.subs.byURI[uri] = to
	r.subs.mu.Unlock()
	r.log.Debug("resource subscribed at its server", "uri", uri, "server", to.server.String(), "serverURI", to.own)
	if err := sub.Subscribe(ctx, to.server, to.own); err != nil {
		r.subs.mu.Lock()
		delete(r.subs.byURI, uri)
		r.subs.mu.Unlock()
		return err
	}
	return nil
}

// Unsubscribe ends the subscription to the exposed resource uri; one not
// subscribed to is no error.
func (r *Router) Unsubscribe(ctx context.Context, uri string) error {
	sub, ok := r.servers.(resourceSubscriber)
	if !ok {
		return ErrSubscriptionsUnsupported
	}
	r.subs.mu.Lock()
	to, ok := r.subs.byURI[uri]
	delete(r.subs.byURI, uri)
	r.subs.mu.Unlock()
	if !ok {
		return nil
	}
	return sub.Unsubscribe(ctx, to.server, to.own)
}

// OnResourceUpdated registers fn to be called with the exposed URI of
// every subscribed resource its server says changed. fn runs on the
// server's session goroutine: it must not block. The returned func ends
// the registration.
func (r *Router) OnResourceUpdated(fn func(uri string)) (cancel func()) { return r.subs.fns.Add(fn) }

// resourceUpdated passes a server's update of its own uri on to the
// watchers, under the exposed URI subscribed to.
func (r *Router) resourceUpdated(key events.Key, own string) {
	key = key.Canonical()
	s := &r.subs
	s.mu.Lock()
	var uris []string
	for uri, to := range s.byURI {
		if to.server == key && to.own == own {
			uris = append(uris, uri)
		}
	}
	s.mu.Unlock()
	fns := s.fns.All()
	for _, uri := range uris {
		for _, fn := range fns {
			fn(uri)
		}
	}
}

// resubscribe subscribes again to key's resources subscribed to when its
// server has another session than they were last renewed on: a server
// started again has a new session, without them. A listing of the same
// session (its resources or prompts changed, its tools were listed again)
// renews nothing. A renewal that failed is tried again at the next
// listing. The listings of one server are serial, so two resubscribes of
// one key never overlap.
func (r *Router) resubscribe(key events.Key) {
	sub, ok := r.servers.(resourceSubscriber)
	if !ok {
		return
	}
	session, running := sub.Session(key)
	if !running {
		return // a listing of it will come when it runs
	}
	s := &r.subs
	s.mu.Lock()
	if last, had := s.renewed[key]; had && last == session {
		s.mu.Unlock()
		return
	}
	var own []string
	for _, to := range s.byURI {
		if to.server == key {
			own = append(own, to.own)
		}
	}
	s.mu.Unlock()
	failed := false
	for _, uri := range own {
		ctx, cancel := context.WithTimeout(context.Background(), r.listTimeout)
		if err := sub.Subscribe(ctx, key, uri); err != nil {
			failed = true
			r.log.Warn("resource subscription not renewed", "server", key.String(), "uri", uri, "error", err)
		}
		cancel()
	}
	if failed {
		return
	}
	s.mu.Lock()
	if s.renewed == nil {
		s.renewed = map[events.Key]uint64{}
	}
	s.renewed[key] = session
	s.mu.Unlock()
}

// forgetSession forgets key's session once its server went.
func (r *Router) forgetSession(key events.Key) {
	r.subs.mu.Lock()
	defer r.subs.mu.Unlock()
	delete(r.subs.renewed, key)
}
