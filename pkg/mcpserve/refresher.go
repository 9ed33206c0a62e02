package mcpserve

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Refresher is the lifecycle component that keeps the endpoint's exposed
// set current: it calls Server.Refresh whenever Kick is called. The daemon
// kicks it from the router's OnChange, the one path by which every change
// of what is exposed arrives (a server started, stopped or relisted, a
// workflow became runnable or not, a server's resources or prompts
// changed). Kicks that arrive while a Refresh runs are coalesced into one
// more Refresh, which reads the state as it is by then: none is lost, none
// queues up.
type Refresher struct {
	srv    *Server
	kick   chan struct{}
	starts atomic.Bool
	// busy is, while a Refresh runs, its start (with the monotonic
	// clock, which a wall-clock step cannot fake); nil when idle.
	busy atomic.Pointer[time.Time]
}

// NewRefresher returns the refresher of srv.
func NewRefresher(srv *Server) *Refresher {
	return &Refresher{srv: srv, kick: make(chan struct{}, 1)}
}

// Name is the component's name.
func (r *Refresher) Name() string { return "mcp-refresh" }

// BusySince reports since when a Refresh has been running, if one is.
func (r *Refresher) BusySince() (time.Time, bool) {
	if t := r.busy.Load(); t != nil {
		return *t, true
	}
	return time.Time{}, false
}

// Kick asks for a Refresh; it never blocks.
func (r *Refresher) Kick() {
	select {
	case r.kick <- struct{}{}:
	default: // one is pending: it will read the state as it is then
	}
}

// Start refreshes once, then at every kick until ctx is done.
func (r *Refresher) Start(ctx context.Context) error {
	if !r.starts.CompareAndSwap(false, true) {
		return errors.New("mcp-refresh: started twice")
	}
	r.refresh()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
			r.refresh()
		}
	}
}

func (r *Refresher) refresh() {
	now := time.Now()
	r.busy.Store(&now)
	defer r.busy.Store(nil)
	r.srv.Refresh()
}
