package coordinator

import (
	"container/heap"
	"context"
	"slices"
	"time"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/redact"
)

// settle schedules what follows a reconcile that ended at now and took
// took, tells the observer and publishes the outcome.
func (c *Coordinator) settle(ctx context.Context, h events.Handle, req reconcilers.Request, res reconcilers.Result, now time.Time, took time.Duration, hash string) {
	meta := events.NewMetaAt(now, req.CorrelationID)
	var outcome events.Event
	result := ResultError
	c.mu.Lock()
	st := c.recs.At(h) // held by this worker, so still the key's
	// A dependency that names its retry time (reconcilers.RetryAt) owns the
	// schedule and its bound, such as the supervisor's restart backoff
	// capped at minutes: MaxRetries would give up on it too soon.
	var timed bool
	if res.Err != nil {
		_, timed = reconcilers.RetryTime(res.Err)
	}
	st.exists = true // a failure says nothing of the resource's going; success says below
	switch {
	case res.Err == nil:
		result = ResultSuccess
		st.resetBackoff()
		st.exists = !res.Deleted
		if res.RequeueAfter > 0 {
			result = ResultRequeueAfter
			c.delayLocked(h, st, now.Add(res.RequeueAfter), now)
		}
		outcome = events.ResourceSynced{Meta: meta, Key: req.Key, Attempt: req.Attempt, Duration: took,
			Deleted: res.Deleted, RequeueAfter: res.RequeueAfter, Hash: hash}
	case !reconcilers.IsPermanent(res.Err) && ctx.Err() == nil && (timed || st.failures() < c.opts.MaxRetries):
		if at, ok := reconcilers.RetryTime(res.Err); ok {
			// The reconciler knows when a retry can succeed (a server's
			// own restart backoff): an earlier one would only fail again.
			st.delayed().backoff.setNext(at.Sub(now))
		}
		c.delayLocked(h, st, now.Add(c.backoff.whenItem(&st.delayed().backoff)), now)
		st.retrying = true
		// A runtime or resync trigger that arrived during the reconcile
		// waits for the retry like any other, which continues the failing
		// chain; only a change goes ahead of it.
		if st.pending < changeTrigger {
			st.pending, st.corr = noTrigger, req.CorrelationID
		}
		outcome = events.ResourceFailed{Meta: meta, Key: req.Key, Error: redact.String(res.Err.Error()), Attempt: req.Attempt,
			Duration: took, NextRetry: st.wakeAt().Round(0).UTC()}
	default: // permanent, retries used up, or timed out while stopping
		st.resetBackoff()
		// Retries used up: Failed until a change, a manual trigger or a
		// resync; a runtime trigger that arrived during the reconcile is
		// dropped, and one of those starts the key afresh. A permanent
		// error is not retried, but runtime triggers still reach the key.
		if !reconcilers.IsPermanent(res.Err) && st.pending < resyncTrigger {
			st.pending, st.failed = noTrigger, true
		}
		outcome = events.ResourceFailed{Meta: meta, Key: req.Key, Error: redact.String(res.Err.Error()), Attempt: req.Attempt,
			Duration: took, Permanent: reconcilers.IsPermanent(res.Err)}
	}
	c.mu.Unlock() // the record goes, if idle, once the worker is Done
	if c.opts.Observer != nil {
		c.opts.Observer.ObserveReconcile(req.Key.Kind, result, took)
	}
	c.bus.Publish(outcome)
}

// delayLocked schedules a reconcile of st's key at at: a retry or a
// requeue.
func (c *Coordinator) delayLocked(h events.Handle, st *keyState, at, now time.Time) {
	c.delays++
	d := st.delayed()
	d.wakeAt, d.wakeSeq = at, c.delays
	c.pushWakeLocked(h, at, c.delays)
	if c.retries != nil {
		c.retries.Inc()
	}
	c.armLocked(at, now)
}

// armLocked makes wake fire at at, unless it fires earlier already.
func (c *Coordinator) armLocked(at, now time.Time) {
	if !c.armedFor.IsZero() && !at.Before(c.armedFor) {
		return
	}
	c.armedFor = at
	c.wake.Reset(at.Sub(now))
}

// wakeLoop queues the keys whose retry or requeue is due whenever wake
// fires, taking them from the delay heap (O(log n) a key, not a scan of
// every key), and arms it for the next one.
func (c *Coordinator) wakeLoop(ctx context.Context) {
	defer c.wake.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake.C():
		}
		c.mu.Lock()
		now := c.opts.Clock.Now()
		c.armedFor = time.Time{}
		due, next := c.takeDueLocked(now)
		for _, h := range due {
			c.addLocked(h)
		}
		if !next.IsZero() {
			c.armLocked(next, now)
		}
		c.mu.Unlock()
	}
}

// wakeEntry is a delayed reconcile: key is due at at. seq is the key's
// wakeSeq when it was delayed; an entry whose key has been delayed again,
// or triggered, or forgotten since is stale and dropped when it surfaces.
type wakeEntry struct {
	at  time.Time
	seq uint64
	h   events.Handle
}

// wakeHeap orders delayed reconciles by when they are due, then by the
// order they were delayed in, for container/heap: wakeLoop takes only the
// due ones, instead of scanning every key each time the timer fires.
type wakeHeap []wakeEntry

func (h wakeHeap) Len() int { return len(h) }
func (h wakeHeap) Less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h wakeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)   { *h = append(*h, x.(wakeEntry)) }
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// live reports whether e still stands for its key's pending delay; c.mu is
// held. seq is never reused, so an entry of a handle since released, or
// given to another key, is never live.
func (c *Coordinator) live(e wakeEntry) bool {
	if !c.handles.Held(e.h) {
		return false
	}
	d := c.recs.At(e.h).delay
	return d != nil && d.wakeSeq == e.seq && d.wakeAt.Equal(e.at)
}

// pushWakeLocked records key's delay until at; c.mu is held. Stale entries
// are dropped once they outnumber the keys, so re-delays cannot grow the
// heap without bound.
func (c *Coordinator) pushWakeLocked(h events.Handle, at time.Time, seq uint64) {
	heap.Push(&c.wakes, wakeEntry{at: at, seq: seq, h: h})
	if len(c.wakes) > 2*c.handles.Len()+64 {
		c.wakes = slices.DeleteFunc(c.wakes, func(e wakeEntry) bool { return !c.live(e) })
		heap.Init(&c.wakes)
	}
}

// takeDueLocked pops the live entries due at now, in due order, and
// returns their handles and when the next live one is due (zero if none);
// c.mu is held.
func (c *Coordinator) takeDueLocked(now time.Time) (due []events.Handle, next time.Time) {
	for len(c.wakes) > 0 {
		top := c.wakes[0]
		if !c.live(top) {
			heap.Pop(&c.wakes)
			continue
		}
		if top.at.After(now) {
			return due, top.at
		}
		heap.Pop(&c.wakes)
		due = append(due, top.h)
	}
	return due, time.Time{}
}
