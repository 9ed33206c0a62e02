package statusync

import (
	"math"
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// entry is what the store knows of a key: its Status, kept compact, and its
// write's bookkeeping. Its fields are guarded by Store.mu.
//
// A daemon keeps one per resource, 100,000 of them at rest at scale, so
// it holds no copy of a Status: the key is the interner's already, the state
// is a small number and the times are instants, and the Status is built
// again as it is read (Get, List, the writer). What only a failure sets is
// kept apart, and only while set. That makes it 72 bytes rather than 216,
// and a page of Records an exact size class, 18 KB rather than 56 KB; the
// fields are ordered largest first so that none is padded.
type entry struct {
	correlationID string
	observedHash  string
	lastReconcile instant
	// failure is nil while the Status has no LastError, RetryCount or
	// NextRetry, as once Synced.
	failure *failure
	// version is bumped by every change (Store.version), to tell a key's
	// states apart.
	version uint64
	// writtenSum is the Status.sum of the last successful write, valid if
	// hasWritten: a write equal to it is skipped.
	writtenSum uint64
	state      stateCode
	// reconcileDisabled is Status.ReconcileDisabled.
	reconcileDisabled bool
	// deleted: the resource is gone and its status awaits DeleteStatus;
	// the entry keeps only the correlation ID.
	deleted bool
	// writing: being written or waiting for a write retry. Changes are then
	// not queued: the write's success queues the newest state, and a
	// failed write's retry writes it, after its backoff.
	writing bool
	// queued: in the write queue, not yet taken by the writer; a change
	// then need not add it again.
	queued     bool
	hasWritten bool
}

// failure is what an entry keeps of a Status's failure: 32 bytes, which a
// resource at rest does without.
type failure struct {
	lastError  string
	retryCount int
	nextRetry  instant
}

// stateCode is a State as the index of states.
type stateCode uint8

// states are the States by their code; 0 is the empty State of a deleted
// key's status.
var states = [...]State{"", StatePending, StateReconciling, StateSynced, StateError, StateFailed}

func codeOf(st State) stateCode {
	for i, s := range states {
		if s == st {
			return stateCode(i)
		}
	}
	// The store sets only the States above.
	panic("statusync: unknown state " + string(st))
}

// instant is a time.Time as Unix nanoseconds, when that gives back the very
// same time.Time: in UTC, without a monotonic reading, as the pipeline's
// events carry their times (events.Meta, the coordinator's NextRetry). 0 is
// the zero time. Any other time, such as a test's time.Now(), is kept as it
// is in Store.exact and stands here as exactInstant, so that Get returns
// exactly the time.Time the event carried, location and monotonic reading
// included.
type instant int64

const exactInstant instant = math.MinInt64

// instantOf returns t's instant; ok is false if t is to be kept in
// Store.exact.
func instantOf(t time.Time) (i instant, ok bool) {
	// time.Time's == on purpose: what must round-trip is its
	// representation, not just its instant.
	if t == (time.Time{}) {
		return 0, true
	}
	n := t.UnixNano()
	if i = instant(n); i == 0 || i == exactInstant || t != time.Unix(0, n).UTC() {
		return exactInstant, false
	}
	return i, true
}

// time returns the time.Time of i, which is exact's if i is exactInstant.
func (i instant) time(exact time.Time) time.Time {
	switch i {
	case 0:
		return time.Time{}
	case exactInstant:
		return exact
	}
	return time.Unix(0, int64(i)).UTC()
}

// statusLocked builds the Status of h, whose key is key and entry e. s.mu
// is held, for reading at least.
func (s *Store) statusLocked(h events.Handle, key events.Key, e *entry) Status {
	var exact [2]time.Time
	var f failure
	if e.failure != nil {
		f = *e.failure
	}
	if e.lastReconcile == exactInstant || f.nextRetry == exactInstant {
		exact = s.exact[h]
	}
	return Status{
		Key:               key,
		State:             states[e.state],
		LastReconcileTime: e.lastReconcile.time(exact[0]),
		LastError:         f.lastError,
		RetryCount:        f.retryCount,
		NextRetry:         f.nextRetry.time(exact[1]),
		CorrelationID:     e.correlationID,
		ObservedHash:      e.observedHash,
		ReconcileDisabled: e.reconcileDisabled,
	}
}

// setLocked makes st, but for its key, h's entry e's status. s.mu is held.
func (s *Store) setLocked(h events.Handle, e *entry, st *Status) {
	hadExact := e.lastReconcile == exactInstant || e.failure != nil && e.failure.nextRetry == exactInstant
	var lastOK, nextOK bool
	e.lastReconcile, lastOK = instantOf(st.LastReconcileTime)
	f := failure{lastError: st.LastError, retryCount: st.RetryCount}
	f.nextRetry, nextOK = instantOf(st.NextRetry)
	switch {
	case !lastOK || !nextOK:
		s.exact[h] = [2]time.Time{st.LastReconcileTime, st.NextRetry}
	case hadExact:
		delete(s.exact, h)
	}
	if f == (failure{}) {
		e.failure = nil
	} else {
		if e.failure == nil {
			e.failure = new(failure) // here only: f itself stays off the heap
		}
		*e.failure = f // under s.mu, as every reader: the writer took a Status, not it
	}
	e.state = codeOf(st.State)
	e.correlationID = st.CorrelationID
	e.observedHash = st.ObservedHash
	e.reconcileDisabled = st.ReconcileDisabled
}
