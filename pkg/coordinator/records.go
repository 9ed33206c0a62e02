package coordinator

import (
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// keyState is the one record the coordinator keeps of a key with pending
// work, a scheduled retry or requeue, a reconcile in flight, or a Failed
// tombstone: its triggers, its place in the queue, its backoff. Records
// live in one slice indexed by the key's handle (events.Interner), which
// is what the workqueue, the delay heap and the workers pass around, so a
// key's three strings are hashed once, when its trigger arrives. The
// workqueue dedups handles but cannot say why one came out: this can.
type keyState struct {
	// corr is the correlation ID of the key's newest trigger.
	corr string
	// delay is the key's scheduled retry or requeue and its failure
	// streak; nil while it has neither, as a key at rest has. Kept in
	// every record, these fields would make a record three times as
	// large, for every resource at rest.
	delay *delayState
	// pending is the strongest trigger that asked for a reconcile now;
	// noTrigger if none did.
	pending trigger
	// retrying says the delay's wakeAt is a backoff retry, which runtime
	// events must not bypass.
	retrying bool
	// failed is the tombstone of a key whose retries ran out: it stays
	// Failed until a change, a manual trigger or a resync, whatever runtime
	// triggers say. A failed key has nothing pending and no wakeAt. (A
	// permanent error leaves no tombstone: it is an error of the definition,
	// which retrying cannot fix, while what runs may still change and need
	// reconciling, such as a crash of the last good server.)
	failed bool
	// queued: the handle was added to the workqueue and no worker has
	// taken it since; held: a worker took it and has not called Done.
	// While either holds, the handle is not released: a handle that a
	// queue or a worker still holds, given to another key, would make the
	// queue's one-worker-per-item rule guard the wrong key.
	queued, held bool
	// exists: as far as its last reconcile knows, the key's resource is
	// declared or runs. Its record and handle are kept while it does, so
	// that a resource's next trigger finds them rather than interning its
	// key afresh; they go once a reconcile reports it deleted, a resync
	// prunes its tombstone, or its kind is disabled.
	exists bool
}

// delayState is a key's scheduled wake and its backoff.
type delayState struct {
	// wakeAt is when a retry or a requeue is due; zero if none is.
	wakeAt time.Time
	// wakeSeq orders keys due at one instant: the first delayed is the
	// first queued, so that a replay's output does not depend on map order.
	wakeSeq uint64
	// backoff is the key's failure streak (JitteredBackoff's per-item
	// state, kept here rather than in a map of its own).
	backoff backoffItem
}

// wakeAt is when st's retry or requeue is due; zero if none is.
func (st *keyState) wakeAt() time.Time {
	if st.delay == nil {
		return time.Time{}
	}
	return st.delay.wakeAt
}

// failures is st's failure streak.
func (st *keyState) failures() int {
	if st.delay == nil {
		return 0
	}
	return st.delay.backoff.failures
}

// delayed returns st's delay, making it if st has none.
func (st *keyState) delayed() *delayState {
	if st.delay == nil {
		st.delay = &delayState{}
	}
	return st.delay
}

// clearWake drops st's scheduled wake; its backoff stays.
func (st *keyState) clearWake() {
	if st.delay != nil {
		st.delay.wakeAt = time.Time{}
		st.dropDelayIfEmpty()
	}
}

// resetBackoff ends st's failure streak; its scheduled wake stays.
func (st *keyState) resetBackoff() {
	if st.delay != nil {
		st.delay.backoff = backoffItem{}
		st.dropDelayIfEmpty()
	}
}

func (st *keyState) dropDelayIfEmpty() {
	if st.delay.wakeAt.IsZero() && st.delay.backoff == (backoffItem{}) {
		st.delay = nil
	}
}

// record returns key's handle and record, making them if need be; c.mu is
// held. The pointer is valid until the record is released.
func (c *Coordinator) record(key events.Key) (events.Handle, *keyState) {
	h, _ := c.handles.Intern(key)
	return h, c.recs.At(h)
}

// lookup returns key's record, if it has one; c.mu is held.
func (c *Coordinator) lookup(key events.Key) (events.Handle, *keyState, bool) {
	h, ok := c.handles.Lookup(key)
	if !ok {
		return 0, nil, false
	}
	return h, c.recs.At(h), true
}

// settled reports whether st has nothing to do: nothing pending, due or
// failed.
func (st *keyState) settled() bool {
	return st.pending == noTrigger && st.wakeAt().IsZero() && !st.failed
}

// idle reports whether st may go: settled, its resource gone, and no queue
// or worker holding its handle.
func (st *keyState) idle() bool {
	return st.settled() && !st.exists && !st.queued && !st.held
}

// releaseIfIdle drops h's record and gives the handle back once nothing
// needs it; c.mu is held. Once no key is held, the table a burst (a cold
// start of 10,000 resources) grew is dropped, rather than pinning the
// burst's peak for the daemon's life.
func (c *Coordinator) releaseIfIdle(h events.Handle) {
	if !c.handles.Held(h) {
		return
	}
	if st := c.recs.At(h); !st.idle() {
		if st.settled() && !st.queued && !st.held {
			st.corr = "" // kept for its resource: the chain it named is over
		}
		return
	}
	*c.recs.At(h) = keyState{}
	if c.handles.Release(h) {
		c.recs.Reset()
	}
}

// addLocked puts h in the workqueue; c.mu is held. Before Start there is
// no queue: Start adds every key with a pending trigger.
func (c *Coordinator) addLocked(h events.Handle) {
	if c.queue == nil {
		return
	}
	c.recs.At(h).queued = true
	c.queue.Add(h)
}
