package router

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/musterd/musterd/internal/registry"
	"github.com/musterd/musterd/internal/turns"
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

// subscriptions are the resources subscribed to, each at the server that
// offers it, and the watchers of their updates. A server's resource is
// wanted by the exposed URIs routed to it (Subscribe, for /mcp and
// /mcp/direct) and by its server's view (SubscribeServer, by the server's
// own URI): it is subscribed at the server while one of them wants it,
// once.
type subscriptions struct {
	once  sync.Once
	mu    sync.Mutex
	byURI map[string]route // exposed URI → the server and its own URI
	own   map[route]bool   // subscribed through the server's view
	// turns serialise, for one server's resource, the check of who wants
	// it, the call at the server and the record: without them an exposed
	// URI's unsubscribe and the server view's subscribe of the same
	// resource could land at the server in the other order, leaving it
	// unsubscribed while wanted. One per resource, so a slow server delays
	// its own only.
	turns turns.Keyed[route]
	// renewed is each server's session its subscriptions were last
	// renewed on (or found on, before any): resubscribe renews them on
	// another only.
	renewed map[events.Key]uint64
	fns     registry.Funcs[func(uri string)]
	ownFns  registry.Funcs[func(key events.Key, uri string)]
}

// wantedLocked reports whether anyone wants to's resource.
func (s *subscriptions) wantedLocked(to route) bool {
	if s.own[to] {
		return true
	}
	for _, r := range s.byURI {
		if r == to {
			return true
		}
	}
	return false
}

// subscriber returns the Servers as a resourceSubscriber, watching their
// updates from the first subscription on.
func (r *Router) subscriber() (resourceSubscriber, error) {
	sub, ok := r.servers.(resourceSubscriber)
	if !ok {
		return nil, ErrSubscriptionsUnsupported
	}
	r.subs.once.Do(func() { sub.WatchResourceUpdates(r.resourceUpdated) })
	return sub, nil
}

// hold records a want of to's resource (record, under subs.mu), first
// subscribing at its server if nobody wanted it: in to's turn.
func (r *Router) hold(ctx context.Context, sub resourceSubscriber, to route, record func(*subscriptions)) error {
	s := &r.subs
	giveBack, err := s.turns.Take(ctx, to)
	if err != nil {
		return err
	}
	defer giveBack()
	s.mu.Lock()
	wanted := s.wantedLocked(to)
	s.mu.Unlock()
	if !wanted {
		if err := sub.Subscribe(ctx, to.server, to.own); err != nil {
			return err
		}
	}
	s.mu.Lock()
	record(s)
	s.mu.Unlock()
	return nil
}

// drop forgets a want of to's resource (forget, under subs.mu, reports
// whether there was one) and unsubscribes at its server if nobody wants it
// now: in to's turn.
func (r *Router) drop(ctx context.Context, sub resourceSubscriber, to route, forget func(*subscriptions) bool) error {
	s := &r.subs
	giveBack, err := s.turns.Take(ctx, to)
	if err != nil {
		return err
	}
	defer giveBack()
	s.mu.Lock()
	had := forget(s)
	wanted := s.wantedLocked(to)
	s.mu.Unlock()
	if !had || wanted {
		return nil
	}
	return sub.Unsubscribe(ctx, to.server, to.own)
}

// Subscribe subscribes to the exposed resource uri at the server that
// offers it, which then sends notifications/resources/updated for it; the
// OnResourceUpdated watchers get them under the exposed URI. A server
// started again is subscribed again once it has been listed. A URI no
// running server offers, even when listed again, fails with
// ErrUnknownResource. Subscribing twice is subscribing once; a resource
// its server's view subscribed to already is not subscribed again.
func (r *Router) Subscribe(ctx context.Context, uri string) error {
	if r.servesOwn(uri) {
		return nil // musterd's own: read afresh each time, never announced
	}
	sub, err := r.subscriber()
	if err != nil {
		return err
	}
	to, ok := r.listings.snapshot().resolveURI(uri)
	if !ok {
		if err := r.relistAll(ctx); err != nil {
			return err
		}
		if to, ok = r.listings.snapshot().resolveURI(uri); !ok {
			return fmt.Errorf("resource %q: %w", uri, ErrUnknownResource)
		}
	}
	r.log.Debug("resource subscribed at its server", "uri", uri, "server", to.server.String(), "serverURI", to.own)
	var before route
	var had bool
	err = r.hold(ctx, sub, to, func(s *subscriptions) {
		before, had = s.byURI[uri]
		if s.byURI == nil {
			s.byURI = map[string]route{}
		}
		s.byURI[uri] = to
	})
	if err == nil && had && before != to {
		// The URI is another server's now: the old one's subscription
		// goes, unless its view wants it.
		_ = r.drop(ctx, sub, before, func(*subscriptions) bool { return true })
	}
	return err
}

// Unsubscribe ends the subscription to the exposed resource uri; one not
// subscribed to is no error.
func (r *Router) Unsubscribe(ctx context.Context, uri string) error {
	sub, err := r.subscriber()
	if err != nil {
		return err
	}
	r.subs.mu.Lock()
	to, ok := r.subs.byURI[uri]
	r.subs.mu.Unlock()
	if !ok {
		return nil
	}
	return r.drop(ctx, sub, to, func(s *subscriptions) bool {
		if s.byURI[uri] != to {
			return false // unsubscribed meanwhile
		}
		delete(s.byURI, uri)
		return true
	})
}

// SubscribeServer subscribes to the resource uri of server key, by the
// server's own URI: the subscription of the view of that server alone.
// The OnServerResourceUpdated watchers get the server's updates of it. As
// Subscribe's, a server started again is subscribed again once listed,
// and a resource the exposed URIs subscribed to already is not subscribed
// again; a server that does not run fails with the supervisor's error.
func (r *Router) SubscribeServer(ctx context.Context, key events.Key, uri string) error {
	sub, err := r.subscriber()
	if err != nil {
		return err
	}
	to := route{server: key.Canonical(), own: uri}
	return r.hold(ctx, sub, to, func(s *subscriptions) {
		if s.own == nil {
			s.own = map[route]bool{}
		}
		s.own[to] = true
	})
}

// UnsubscribeServer ends SubscribeServer's subscription; one not
// subscribed to is no error.
func (r *Router) UnsubscribeServer(ctx context.Context, key events.Key, uri string) error {
	sub, err := r.subscriber()
	if err != nil {
		return err
	}
	to := route{server: key.Canonical(), own: uri}
	return r.drop(ctx, sub, to, func(s *subscriptions) bool {
		had := s.own[to]
		delete(s.own, to)
		return had
	})
}

// OnResourceUpdated registers fn to be called with the exposed URI of
// every subscribed resource its server says changed. fn runs on the
// server's session goroutine: it must not block. The returned func ends
// the registration.
func (r *Router) OnResourceUpdated(fn func(uri string)) (cancel func()) { return r.subs.fns.Add(fn) }

// OnServerResourceUpdated registers fn to be called with the server and
// its own URI of every resource subscribed through SubscribeServer that
// the server says changed. fn runs on the server's session goroutine: it
// must not block. The returned func ends the registration.
func (r *Router) OnServerResourceUpdated(fn func(key events.Key, uri string)) (cancel func()) {
	return r.subs.ownFns.Add(fn)
}

// resourceUpdated passes a server's update of its own uri on to the
// watchers: under the exposed URIs subscribed to, and as the server's own
// if its view subscribed.
func (r *Router) resourceUpdated(key events.Key, own string) {
	key = key.Canonical()
	at := route{server: key, own: own}
	s := &r.subs
	s.mu.Lock()
	var uris []string
	for uri, to := range s.byURI {
		if to == at {
			uris = append(uris, uri)
		}
	}
	viewWants := s.own[at]
	s.mu.Unlock()
	fns := s.fns.All()
	for _, uri := range uris {
		for _, fn := range fns {
			fn(uri)
		}
	}
	if viewWants {
		for _, fn := range s.ownFns.All() {
			fn(key, own)
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
	own := map[string]bool{}
	for _, to := range s.byURI {
		if to.server == key {
			own[to.own] = true
		}
	}
	for to := range s.own {
		if to.server == key {
			own[to.own] = true
		}
	}
	s.mu.Unlock()
	failed := false
	for uri := range own {
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
