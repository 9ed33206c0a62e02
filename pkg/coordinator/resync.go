package coordinator

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
)

// Resync asks for a resync pass now. A request made while a pass runs
// starts at most one more pass after it.
func (c *Coordinator) Resync() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case c.resyncRequested <- struct{}{}:
		c.resyncs++
	default: // a pass is requested already
	}
}

// ReconcileAll asks for a resync pass that enqueues every listed key at
// once, not paced at ResyncQPS, and then prunes like any pass. A newly
// elected leader calls it: the triggers of its index's initial listing
// reached no coordinator, so it must reconcile everything, and a paced
// pass would take 100 s for 10,000 resources at the default ResyncQPS, on
// every cold start and failover. A request made while a pass runs makes
// the one more pass after it unpaced; the passes after that are paced
// again.
func (c *Coordinator) ReconcileAll() {
	c.mu.Lock()
	c.unpaced = true
	c.mu.Unlock()
	c.Resync()
}

// resyncLoop runs resync passes one at a time, when the single resync
// ticker fires or when one is requested.
func (c *Coordinator) resyncLoop(ctx context.Context, ticker clock.Ticker) {
	var tick <-chan time.Time
	if ticker != nil {
		defer ticker.Stop()
		tick = ticker.C()
	}
	ticked := func() { // a tick was taken; the next is a period later
		c.mu.Lock()
		for !c.nextTick.After(c.opts.Clock.Now()) {
			c.nextTick = c.nextTick.Add(c.opts.ResyncPeriod)
		}
		c.mu.Unlock()
	}
	burst := max(1, int(math.Ceil(c.opts.ResyncQPS)))
	pace := rate.NewLimiter(rate.Limit(c.opts.ResyncQPS), burst)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			c.Resync()
			ticked()
		case <-c.resyncRequested:
			select {
			case <-tick: // this pass serves a tick that is due
				ticked()
			default:
			}
			c.resyncPass(ctx, pace)
			c.mu.Lock()
			c.resyncs--
			c.mu.Unlock()
		}
	}
}

// paced waits, on the coordinator's clock, until pace allows one more key
// (rate.Limiter.Wait would wait on the real clock).
func (c *Coordinator) paced(ctx context.Context, pace *rate.Limiter) error {
	r := pace.ReserveN(c.opts.Clock.Now(), 1)
	delay := r.DelayFrom(c.opts.Clock.Now())
	if delay <= 0 {
		return nil
	}
	c.mu.Lock()
	t := c.opts.Clock.NewTimer(delay)
	c.pacedUntil = c.opts.Clock.Now().Add(delay)
	c.mu.Unlock()
	defer func() {
		t.Stop()
		c.mu.Lock()
		c.pacedUntil = time.Time{}
		c.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		r.CancelAt(c.opts.Clock.Now())
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// resyncPass enqueues the keys of every enabled kind, as listed by its
// reconciler, desired and running alike, paced unless ReconcileAll asked
// for the pass. Then it drops the tombstones of
// Failed keys that are gone: those of a kind whose List no longer reports
// them, of a disabled kind, or of a kind with no reconciler.
func (c *Coordinator) resyncPass(ctx context.Context, pace *rate.Limiter) {
	corr := c.opts.NewCorrelationID()
	listed := map[events.Key]bool{}
	listedKinds := map[string]bool{}
	c.mu.Lock()
	skip, unpaced := c.indexSynced, c.unpaced
	c.indexSynced, c.unpaced = nil, false
	c.mu.Unlock()
	for _, kind := range c.reg.Kinds() {
		if !c.KindEnabled(kind) {
			continue
		}
		keys, err := c.list(ctx, kind)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.log.Warn("resync: listing failed; kind skipped this pass", "kind", kind, "error", redact.String(err.Error()))
			continue
		}
		listedKinds[kind] = true
		for _, key := range keys {
			listed[key.Canonical()] = true
			if skip[key.Canonical()] {
				continue
			}
			if !unpaced && c.paced(ctx, pace) != nil {
				return
			}
			c.enqueue(key, corr, events.ReasonResync)
		}
	}
	c.mu.Lock()
	for h, key := range c.handles.All {
		st := c.recs.At(h)
		if _, known := c.reg.Get(key.Kind); st.failed && (!known || c.disabled[key.Kind] || listedKinds[key.Kind] && !listed[key]) {
			st.failed, st.exists = false, false
			c.releaseIfIdle(h) // a tombstone has nothing else to keep
		}
	}
	c.mu.Unlock()
	c.log.Debug("resync pass done", "keys", len(listed), "correlationId", corr)
}
