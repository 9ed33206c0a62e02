package mcpserve

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// Refresher is the lifecycle component that keeps the endpoint's exposed
// set current: it calls Server.Refresh after every event that may have
// changed what the Backend or a Provider offers (a reconcile's outcome, a
// server's state change), and whenever Kick is called (a router or a
// workflow provider that knows of a change first). Kicks and events that
// arrive while a Refresh runs are coalesced into one more Refresh, which
// reads the state as it is by then: none is lost, none queues up.
type Refresher struct {
	srv      *Server
	bus      *bus.Bus
	kick     chan struct{}
	attached bus.Attachment
	starts   atomic.Bool
}

// NewRefresher returns the refresher of srv, following b.
func NewRefresher(b *bus.Bus, srv *Server) *Refresher {
	return &Refresher{srv: srv, bus: b, kick: make(chan struct{}, 1)}
}

// Name is the component's name.
func (r *Refresher) Name() string { return "mcp-refresh" }

// SubscriptionReady is closed once Start has subscribed.
func (r *Refresher) SubscriptionReady() <-chan struct{} { return r.attached.SubscriptionReady() }

// BusySince reports since when its handler has been running, if it is.
func (r *Refresher) BusySince() (time.Time, bool) { return r.attached.BusySince() }

// Kick asks for a Refresh; it never blocks.
func (r *Refresher) Kick() {
	select {
	case r.kick <- struct{}{}:
	default: // one is pending: it will read the state as it is then
	}
}

// Start subscribes and refreshes until ctx is done.
func (r *Refresher) Start(ctx context.Context) error {
	if !r.starts.CompareAndSwap(false, true) {
		return errors.New("mcp-refresh: started twice")
	}
	sub, err := r.bus.Subscribe(bus.SubscriberOptions{
		Name: r.Name(),
		// The handler only kicks, which never blocks: a small mailbox
		// cannot fill, and a drop would lose nothing a pending kick does
		// not cover.
		Delivery: bus.Lossy(256),
		Handlers: []bus.Handler{
			bus.On(func(events.ResourceSynced) { r.Kick() }),
			bus.On(func(events.ResourceFailed) { r.Kick() }),
			bus.On(func(events.ServiceStateChanged) { r.Kick() }),
		},
	})
	if err != nil {
		return err
	}
	r.attached.Attach(sub)
	defer sub.Unsubscribe()
	r.srv.Refresh()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
			r.srv.Refresh()
		}
	}
}
