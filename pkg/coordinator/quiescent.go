package coordinator

import (
	"time"
)

// Quiescent reports whether the coordinator has nothing to do at or before
// now: no key waits for a reconcile or a retry that is due, none is being
// reconciled, and no resync pass is requested or running, unless it waits
// for its pacing until after now. wake is the earliest instant after now
// at which it will act on its own (a retry, a requeue, the pacing, the
// resync ticker), zero if none. A replay that steps a fake clock calls it,
// with the bus's Idle, to know when it may move the clock on, and to
// where. It takes time linear in the keys with pending work.
func (c *Coordinator) Quiescent(now time.Time) (quiet bool, wake time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	quiet = c.inFlight == 0
	soonest := func(at time.Time) {
		if at.IsZero() {
			return
		}
		if !at.After(now) {
			quiet = false
		} else if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	for h := range c.handles.All {
		st := c.recs.At(h)
		if st.pending != noTrigger {
			quiet = false
		}
		soonest(st.wakeAt())
	}
	if c.resyncs > 0 {
		if c.pacedUntil.IsZero() {
			quiet = false
		}
		soonest(c.pacedUntil)
	}
	soonest(c.nextTick)
	return quiet, wake
}
