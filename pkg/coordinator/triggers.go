package coordinator

import (
	"context"
	"fmt"

	"github.com/musterd/musterd/pkg/events"
)

// trigger ranks what a reconciliation trigger may do; each rank may do
// what the ranks below it do.
type trigger uint8

const (
	noTrigger trigger = iota
	// runtimeTrigger (service-state, retry, and unknown reasons) reconciles
	// a key that neither waits for a retry nor has failed for good.
	runtimeTrigger
	// resyncTrigger also reconciles a Failed key, afresh.
	resyncTrigger
	// changeTrigger (change, refractory-end, manual, index-synced) also cuts
	// a retry's backoff short: the user changed something, so a failing key
	// deserves a fresh start.
	changeTrigger
)

// triggerOf ranks reason. Runtime reasons never bypass a backoff: muster
// restarted one service 131 times in 53 s because its crashes did.
func triggerOf(reason events.Reason) trigger {
	switch reason {
	case events.ReasonChange, events.ReasonRefractoryEnd, events.ReasonManual, events.ReasonIndexSynced:
		return changeTrigger
	case events.ReasonResync:
		return resyncTrigger
	}
	return runtimeTrigger
}

// Trigger reconciles keys at once, resetting their backoff, as for a
// manual trigger. Keys of disabled kinds are ignored. Before Start, the keys
// wait for it.
func (c *Coordinator) Trigger(keys ...events.Key) {
	corr := c.opts.NewCorrelationID()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range keys {
		c.enqueueLocked(key, corr, events.ReasonManual)
	}
}

// KindEnabled reports whether kind has a reconciler and is not disabled.
func (c *Coordinator) KindEnabled(kind string) bool {
	if _, ok := c.reg.Get(kind); !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.disabled[kind]
}

// SetKindEnabled disables or re-enables a kind. While a kind is disabled its
// triggers are ignored and its pending work is dropped. Re-enabling it
// calls its List (bounded by ReconcileTimeout) and reconciles every key
// listed, as for a manual trigger. An unknown kind is an error; so is a
// List that fails, though the kind is enabled all the same.
func (c *Coordinator) SetKindEnabled(kind string, enabled bool) error {
	if _, ok := c.reg.Get(kind); !ok {
		return fmt.Errorf("coordinator: no reconciler registered for kind %q", kind)
	}
	c.mu.Lock()
	wasEnabled := !c.disabled[kind]
	if enabled {
		delete(c.disabled, kind)
	} else {
		c.disabled[kind] = true
	}
	c.mu.Unlock()
	if !enabled || wasEnabled {
		return nil
	}
	keys, err := c.list(context.Background(), kind)
	if err != nil {
		return fmt.Errorf("coordinator: kind %q enabled, but listing its keys failed: %w", kind, err)
	}
	c.Trigger(keys...)
	return nil
}

// onTrigger enqueues a trigger's keys as one batch, under one hold of the
// lock, in the trigger's order.
func (c *Coordinator) onTrigger(e events.ReconciliationTriggered) {
	c.mu.Lock()
	for tk := range e.Keys.All() {
		corr := tk.CorrelationID
		if corr == "" {
			corr = e.CorrelationID
		}
		c.enqueueLocked(tk.Key, corr, e.Reason)
	}
	if e.Reason == events.ReasonIndexSynced {
		// The initial listing: the pass prunes what runs but is not
		// declared. What is declared was just enqueued, so the pass skips
		// it rather than reconcile every resource a second time, paced at
		// ResyncQPS (100 s of it for 10,000 resources).
		if c.indexSynced == nil {
			c.indexSynced = map[events.Key]bool{}
		}
		for tk := range e.Keys.All() {
			c.indexSynced[tk.Key.Canonical()] = true
		}
	}
	c.mu.Unlock()
	if e.Reason == events.ReasonIndexSynced {
		c.Resync()
	}
}

// enqueue asks for a reconcile of key now; see enqueueLocked.
func (c *Coordinator) enqueue(key events.Key, corr string, reason events.Reason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enqueueLocked(key, corr, reason)
}

// enqueueLocked asks for a reconcile of key now, unless its kind is
// disabled, the key waits for a backoff retry that reason may not cut
// short (that retry will come), or it has failed for good and reason may
// not start it afresh; c.mu is held.
func (c *Coordinator) enqueueLocked(key events.Key, corr string, reason events.Reason) {
	key = key.Canonical()
	if corr == "" { // so that the key's events still share one chain
		corr = c.opts.NewCorrelationID()
	}
	if c.disabled[key.Kind] {
		c.log.Debug("trigger of a disabled kind ignored", "key", key, "reason", reason)
		return
	}
	h, st := c.record(key)
	t := triggerOf(reason)
	switch {
	case t == changeTrigger:
		st.resetBackoff()
		st.clearWake()
		st.retrying = false
	case st.retrying:
		return
	case st.failed && t < resyncTrigger:
		c.log.Debug("trigger of a Failed key ignored", "key", key, "reason", reason)
		return
	}
	st.corr, st.pending, st.failed = corr, max(st.pending, t), false
	c.addLocked(h)
}
