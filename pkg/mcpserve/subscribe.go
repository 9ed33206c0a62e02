package mcpserve

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/internal/turns"
	"github.com/musterd/musterd/pkg/events"
)

// ResourceSubscriber is a Backend that can subscribe to the resources of
// the servers it routes to; *router.Router is one. With it, both views
// advertise resources.subscribe and pass each server's
// notifications/resources/updated on to the sessions subscribed to the
// resource.
type ResourceSubscriber interface {
	// Subscribe subscribes to the exposed resource uri at its server.
	Subscribe(ctx context.Context, uri string) error
	// Unsubscribe ends that subscription.
	Unsubscribe(ctx context.Context, uri string) error
	// OnResourceUpdated registers fn for the exposed URI of every
	// subscribed resource that changed; fn must not block.
	OnResourceUpdated(fn func(uri string)) (cancel func())
}

// ServerSubscriber is a ServerBackend that can subscribe to a server's
// resources by the server's own URIs; *router.Router is one. With it, the
// view of a server that offers resource subscriptions offers them too, and
// passes its notifications/resources/updated on to the view's sessions
// subscribed.
type ServerSubscriber interface {
	SubscribeServer(ctx context.Context, key events.Key, uri string) error
	UnsubscribeServer(ctx context.Context, key events.Key, uri string) error
	// OnServerResourceUpdated registers fn for every resource subscribed
	// through SubscribeServer that changed; fn must not block.
	OnServerResourceUpdated(fn func(key events.Key, uri string)) (cancel func())
}

// subject is what a session subscribes to: an exposed URI of /mcp and
// /mcp/direct (server zero), or a server's own URI on its view.
type subject struct {
	server events.Key
	uri    string
}

// resourceSubs counts the sessions subscribed to each resource, across
// both aggregated views (by exposed URI) and across the sessions of a
// server's view (by the server's own URI), so that a resource is
// subscribed at its server while one session or more wants it, and once
// only. The go-sdk keeps which session wants which URI, and sends the
// updates (mcp.Server.ResourceUpdated).
type resourceSubs struct {
	b  ResourceSubscriber // nil: the aggregated views do not subscribe
	sb ServerSubscriber   // nil: the servers' views do not subscribe

	mu       sync.Mutex
	sessions map[subject]map[*mcp.ServerSession]bool // sessions subscribed
	// turns serialise, for one URI, the check of who wants it, the call at
	// its server and the record of the outcome: without it a session
	// subscribing while another drops the last subscription could see nobody
	// subscribed, subscribe, and be recorded, and then the drop's unsubscribe
	// land at the server, leaving the session recorded but the server
	// unsubscribed (or two first sessions subscribe twice). A turn is per URI,
	// not one lock for all, so that a slow server delays the subscriptions of
	// its own resources only; r.mu is never held across a server call.
	turns   turns.Keyed[subject]
	watched map[*mcp.ServerSession]bool // sessions whose end is watched
	pending map[subject]bool            // subjects updated, not yet told
	telling bool                        // a goroutine tells them
}

// initSubscriptions sets up the forwarding of resource updates when the
// Backend can subscribe (a ResourceSubscriber, a ServerSubscriber), and
// says whether the aggregated views can.
func (s *Server) initSubscriptions() bool {
	b, _ := s.opts.Backend.(ResourceSubscriber)
	sb, _ := s.opts.Backend.(ServerSubscriber)
	if b == nil && sb == nil {
		return false
	}
	s.subs = &resourceSubs{b: b, sb: sb, sessions: map[subject]map[*mcp.ServerSession]bool{}, watched: map[*mcp.ServerSession]bool{}, pending: map[subject]bool{}}
	if b != nil {
		b.OnResourceUpdated(func(uri string) { s.resourceUpdated(subject{uri: uri}) })
	}
	if sb != nil {
		sb.OnServerResourceUpdated(func(key events.Key, uri string) { s.resourceUpdated(subject{server: key.Canonical(), uri: uri}) })
	}
	return b != nil
}

// at subscribes to (on) or unsubscribes from what is subscribed to, at its
// server.
func (r *resourceSubs) at(ctx context.Context, what subject, on bool) error {
	switch {
	case what.server.Name == "" && on:
		return r.b.Subscribe(ctx, what.uri)
	case what.server.Name == "":
		return r.b.Unsubscribe(ctx, what.uri)
	case on:
		return r.sb.SubscribeServer(ctx, what.server, what.uri)
	}
	return r.sb.UnsubscribeServer(ctx, what.server, what.uri)
}

// subscribe is the aggregated views' resources/subscribe handler.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	return s.hold(ctx, subject{uri: req.Params.URI}, req.Session)
}

// serverSubscribe returns the resources/subscribe and
// resources/unsubscribe handlers of key's server's view.
func (s *Server) serverSubscribe(key events.Key) (func(context.Context, *mcp.SubscribeRequest) error, func(context.Context, *mcp.UnsubscribeRequest) error) {
	key = key.Canonical()
	return func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return s.hold(ctx, subject{server: key, uri: req.Params.URI}, req.Session)
		}, func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			return s.release(subject{server: key, uri: req.Params.URI}, req.Session)
		}
}

// hold is a view's resources/subscribe: the first session to want uri
// subscribes to it at its server; a failure there is the client's error,
// and the go-sdk records no subscription. It runs in uri's turn, so that
// no other session's subscribe or unsubscribe of uri comes between the
// check, the call and the record.
func (s *Server) hold(ctx context.Context, uri subject, ss *mcp.ServerSession) error {
	r := s.subs
	giveBack, err := r.turns.Take(ctx, uri)
	if err != nil {
		return err
	}
	defer giveBack()
	r.mu.Lock()
	first := len(r.sessions[uri]) == 0
	r.mu.Unlock()
	if first {
		if err := r.at(ctx, uri, true); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[uri] == nil {
		r.sessions[uri] = map[*mcp.ServerSession]bool{}
	}
	r.sessions[uri][ss] = true
	if ss != nil && !r.watched[ss] {
		r.watched[ss] = true
		go func() {
			_ = ss.Wait()
			s.dropSession(ss)
		}()
	}
	return nil
}

// unsubscribe is the views' resources/unsubscribe handler: the last
// session to want uri unsubscribes from it at its server, in uri's turn.
// The go-sdk calls it too when a subscriptions/listen stream of the newest
// protocol (2026-07-28) that subscribed to uri ends, with the stream's
// context, done by then: so a release never depends on the request's
// context, else the server would stay subscribed with nobody recorded
// (and the go-sdk, told of an error, would keep sending the session
// updates it gave up).
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	return s.release(subject{uri: req.Params.URI}, req.Session)
}

// forget forgets that ss wants uri, and reports whether nobody does now.
// The caller holds uri's turn.
func (s *Server) forget(uri subject, ss *mcp.ServerSession) bool {
	r := s.subs
	r.mu.Lock()
	defer r.mu.Unlock()
	set, ok := r.sessions[uri]
	if !ok || !set[ss] {
		return false
	}
	delete(set, ss)
	if len(set) > 0 {
		return false
	}
	delete(r.sessions, uri)
	return true
}

// dropSession releases the subscriptions of a session that ended without
// unsubscribing, each in its URI's turn, on the ended session's own
// goroutine.
func (s *Server) dropSession(ss *mcp.ServerSession) {
	r := s.subs
	r.mu.Lock()
	delete(r.watched, ss)
	var uris []subject
	for uri, set := range r.sessions {
		if set[ss] {
			uris = append(uris, uri)
		}
	}
	r.mu.Unlock()
	for _, uri := range uris {
		s.dropOne(uri, ss)
	}
}

// dropOne releases ss's subscription to uri, for a session that ended.
func (s *Server) dropOne(uri subject, ss *mcp.ServerSession) {
	if err := s.release(uri, ss); err != nil {
		s.log.Debug("resource unsubscribe after the session ended", "server", uri.server.String(), "uri", uri.uri, "error", err)
	}
}

// release forgets that ss wants uri and, when nobody does now, unsubscribes
// at the server, in uri's turn. Waiting for the turn is not bounded here:
// whoever holds it is bounded by its request's context, or is a release,
// bounded by subscribeTimeout, as this one's call at the server is.
func (s *Server) release(uri subject, ss *mcp.ServerSession) error {
	giveBack, _ := s.subs.turns.Take(context.Background(), uri) // cannot fail: never cancelled
	defer giveBack()
	if !s.forget(uri, ss) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	return s.subs.at(ctx, uri, false)
}

// subscribeTimeout bounds an unsubscribe at a server.
const subscribeTimeout = 10 * time.Second

// resourceUpdated notes uri as updated and makes sure a goroutine tells
// the subscribed sessions: it runs on a managed server's session
// goroutine, which must not wait for slow clients. Updates of one URI
// that come while it is being told are coalesced into one.
func (s *Server) resourceUpdated(uri subject) {
	r := s.subs
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[uri] = true
	if r.telling {
		return
	}
	r.telling = true
	go s.tellUpdates()
}

func (s *Server) tellUpdates() {
	r := s.subs
	for {
		r.mu.Lock()
		if len(r.pending) == 0 {
			r.telling = false
			r.mu.Unlock()
			return
		}
		var uris []subject
		for uri := range r.pending {
			uris = append(uris, uri)
		}
		clear(r.pending)
		r.mu.Unlock()
		for _, uri := range uris {
			p := &mcp.ResourceUpdatedNotificationParams{URI: uri.uri}
			// Each view's go-sdk server tells the sessions subscribed on it.
			if uri.server.Name != "" {
				if v := s.servers.get(viewKey{key: uri.server}); v != nil {
					_ = v.srv.ResourceUpdated(context.Background(), p)
				}
				continue
			}
			_ = s.meta.ResourceUpdated(context.Background(), p)
			_ = s.direct.ResourceUpdated(context.Background(), p)
		}
	}
}
