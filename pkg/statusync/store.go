package statusync

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/keyqueue"
	"github.com/musterd/musterd/pkg/redact"
)

// State is where a resource stands in its reconcile cycle.
type State string

// States.
const (
	// StatePending: a change was seen; no reconcile has started since.
	StatePending State = "Pending"
	// StateReconciling: a reconcile is running.
	StateReconciling State = "Reconciling"
	// StateSynced: the last reconcile succeeded.
	StateSynced State = "Synced"
	// StateError: the last reconcile failed. Either a retry is scheduled
	// (NextRetry), or the error is permanent, such as an invalid
	// definition, and waits for the user to fix it.
	StateError State = "Error"
	// StateFailed: the last reconcile failed with a transient error and the
	// retries are used up; the resource waits for its next change or
	// resync.
	StateFailed State = "Failed"
)

// Status is what users see of one resource.
type Status struct {
	Key   events.Key
	State State
	// LastReconcileTime is when the last reconcile finished, successfully or
	// not; zero if none has.
	LastReconcileTime time.Time
	// LastError is the last reconcile error, redacted; empty once Synced.
	LastError string
	// RetryCount is the number of retries made in the current failure
	// streak; 0 after a success.
	RetryCount int
	// NextRetry is when the failed reconcile is retried; zero when no
	// retry is scheduled.
	NextRetry time.Time
	// CorrelationID is that of the chain of the last event applied.
	CorrelationID string
	// ObservedHash is the content hash of the definition the last
	// successful reconcile covers (events.ResourceSynced.Hash): a Synced
	// is of the definition in force only while the index's hash is this.
	ObservedHash string
	// ReconcileDisabled: an operator disabled the reconciliation of the
	// resource's kind (Store.SetKindDisabled). Its changes are watched but
	// not applied, so State tells of the last reconcile, not of the
	// definition in force, until the kind is enabled again.
	ReconcileDisabled bool
}

// sum hashes every field of s, times by instant (as time.Time.Equal compares
// them), so that the store remembers what it last wrote in 8 bytes rather
// than in a copy of the status.
func (s Status) sum(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, f := range [...]string{s.Key.Kind, s.Key.Namespace, s.Key.Name, string(s.State), s.LastError, s.CorrelationID, s.ObservedHash} {
		h.WriteString(f)
		h.WriteByte(0) // field separator: "ab","c" differs from "a","bc"
	}
	var buf [8*5 + 1]byte
	binary.LittleEndian.PutUint64(buf[0:], uint64(s.RetryCount))
	if s.ReconcileDisabled {
		buf[8*5] = 1
	}
	for i, t := range [...]time.Time{s.LastReconcileTime, s.NextRetry} {
		zero := uint64(0)
		if t.IsZero() {
			zero = 1
		}
		binary.LittleEndian.PutUint64(buf[8+16*i:], uint64(t.UnixNano()))
		binary.LittleEndian.PutUint64(buf[16+16*i:], zero)
	}
	h.Write(buf[:])
	return h.Sum64()
}

// StatusWriter puts statuses where users look for them, such as a custom
// resource's status subresource. The store calls it from one goroutine and
// never for one key concurrently.
type StatusWriter interface {
	// WriteStatus writes st. Wrap an error with WithCategory to classify it.
	WriteStatus(ctx context.Context, st Status) error
	// DeleteStatus removes the status of a resource that is gone. It must
	// treat a missing status as success: the store cannot know what an
	// earlier run left behind, so it deletes without looking.
	DeleteStatus(ctx context.Context, key events.Key) error
}

// StoreOptions configures a Store. The zero value keeps statuses in memory
// only.
type StoreOptions struct {
	// Writer receives statuses. Nil keeps them in memory only; StatusSynced
	// is still published, since the memory is then where users look.
	Writer StatusWriter
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// RetryBaseDelay is the delay before a key's first write retry; it
	// doubles with each failure up to RetryMaxDelay. Defaults: 1s and 5m.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// WriteTimeout is the deadline of the context passed to each
	// WriteStatus and DeleteStatus call; the writer must honour it. Default
	// 10s.
	WriteTimeout time.Duration
	// QueueMetrics, if set, receives the write queue's metrics under the
	// queue name "status-store" (see NewWorkqueueMetricsProvider).
	QueueMetrics workqueue.MetricsProvider
	// HoldWrites, if set, holds every write until it is closed. Statuses
	// are kept, and shown, meanwhile; each resource's write waits in the
	// queue, which keeps one per resource, with its newest state. The
	// daemon closes it once the first full reconcile is done
	// (Readiness.Done), so that a cold start's thousands of status writes
	// follow its reconciles, each resource's once, rather than competing
	// with them for the CPU. Default nil: no hold.
	HoldWrites <-chan struct{}
	// Clock is what the store, its write retries and its failure log read
	// the time from and wait on; StatusSynced events are stamped with it.
	// Default: the real clock. A replay outside testing/synctest steps a
	// fake one. WriteTimeout stays on the real clock: it bounds real I/O.
	Clock clock.WithTicker
}

const (
	storeName = "status-store"

	// lagStates is how many events wait for the store before its mailbox
	// coalesces them by key (bus.Delivery.Lazy): about 230 KB of items.
	lagStates = 4096

	// A key whose writes keep failing is logged at its first failure, then
	// when this interval has passed, doubling up to the maximum.
	failureLogFirstInterval = 30 * time.Second
	failureLogMaxInterval   = 5 * time.Minute
)

// Store keeps the status of every resource and writes it through a
// StatusWriter. Make it with NewStore; it works once Start runs. Get and List
// are safe for concurrent use.
type Store struct {
	bus      *bus.Bus
	opts     StoreOptions
	log      *slog.Logger
	attached bus.Attachment
	queue    *keyqueue.Queue                           // made by Start
	retries  workqueue.TypedRateLimiter[events.Handle] // the write retries' backoff
	retried  workqueue.CounterMetric                   // write retries, as the delaying queue counted them
	stopped  chan struct{}                             // closed as Start returns: retries waiting give up
	starts   atomic.Bool

	seed maphash.Seed // of Status.sum
	mu   sync.RWMutex
	// handles interns each key once, when its first event arrives; entries,
	// indexed by handle, holds all that the store knows of the key in one
	// record. The write queue carries handles, so that a key's three
	// strings are hashed once per event, not in each of the queue's sets
	// and metrics maps.
	handles  events.Interner
	entries  events.Records[entry]
	version  uint64          // bumped by every change, to tell a key's states apart
	disabled map[string]bool // kinds whose reconciliation is disabled
	// exact holds the times, last reconcile and next retry, of the keys
	// one of whose times an entry cannot hold as an instant; in the
	// daemon, none.
	exact map[events.Handle][2]time.Time
	// changing is the Status update has change edit: a Status of its own
	// would escape to the heap, through change, at every event.
	changing Status
	// For Quiescent: keys queued for a write, writes in progress, and
	// when the keys whose write failed are retried.
	queued  int
	inWrite int
	retryAt map[events.Handle]time.Time

	// Owned by the writer goroutine.
	failing map[events.Key]*failureLog
}

// snapshot is a key's newest state, as the writer takes it.
type snapshot struct {
	status Status
	// deleted: the resource is gone and its status awaits DeleteStatus;
	// status keeps only the key and correlation ID.
	deleted bool
	version uint64
}

// failureLog throttles the logging of one key's failure streak.
type failureLog struct {
	since      time.Time // first failure
	nextLog    time.Time
	interval   time.Duration
	suppressed int // failures not logged since the last log
}

// NewStore returns a store of b's reconcile events.
func NewStore(b *bus.Bus, opts StoreOptions) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.RetryBaseDelay = cmp.Or(opts.RetryBaseDelay, time.Second)
	opts.RetryMaxDelay = cmp.Or(opts.RetryMaxDelay, 5*time.Minute)
	opts.WriteTimeout = cmp.Or(opts.WriteTimeout, 10*time.Second)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Store{
		disabled: map[string]bool{},
		bus:      b,
		opts:     opts,
		log:      opts.Logger.With("component", storeName),
		seed:     maphash.MakeSeed(),
		retryAt:  map[events.Handle]time.Time{},
		exact:    map[events.Handle][2]time.Time{},
		stopped:  make(chan struct{}),
		failing:  map[events.Key]*failureLog{},
	}
}

// Name is the component's name, also its bus subscription's.
func (s *Store) Name() string { return storeName }

// SubscriptionReady is closed once Start has subscribed to the bus.
func (s *Store) SubscriptionReady() <-chan struct{} { return s.attached.SubscriptionReady() }

// BusySince reports since when the store's event handler has been running,
// if it is.
func (s *Store) BusySince() (time.Time, bool) { return s.attached.BusySince() }

// Start subscribes to the bus and runs the writer until ctx is done. A write
// in flight is then cancelled and queued writes are abandoned: the next run
// reconciles, and so writes, every resource again. Start may be called once.
func (s *Store) Start(ctx context.Context) error {
	if !s.starts.CompareAndSwap(false, true) {
		return errors.New("status store: started twice")
	}
	s.retries = workqueue.NewTypedItemExponentialFailureRateLimiter[events.Handle](s.opts.RetryBaseDelay, s.opts.RetryMaxDelay)
	s.queue = keyqueue.New(keyqueue.Config{Name: storeName, MetricsProvider: s.opts.QueueMetrics, Clock: s.opts.Clock})
	if s.opts.QueueMetrics != nil {
		s.retried = s.opts.QueueMetrics.NewRetriesMetric(storeName)
	}
	sub, err := s.bus.Subscribe(bus.SubscriberOptions{
		Name: storeName,
		// One subscription for every type keeps a key's events in order;
		// coalescing by key keeps its newest only, once lagStates events
		// wait: the store applies states idempotently, so while it keeps
		// up nothing is hashed for it under the publish lock.
		Delivery: bus.Coalescing(bus.ByResourceKey).Lazy(lagStates),
		Handlers: []bus.Handler{
			bus.On(s.onChanged),
			bus.On(s.onStarted),
			bus.On(s.onSynced),
			bus.On(s.onFailed),
		},
	})
	if err != nil {
		s.queue.ShutDown()
		return fmt.Errorf("status store: %w", err)
	}
	s.attached.Attach(sub)

	var writer sync.WaitGroup
	writer.Go(func() { s.writeLoop(ctx) })
	<-ctx.Done()
	sub.Unsubscribe()
	<-sub.Done() // no handler adds to the queue any more
	s.queue.ShutDown()
	writer.Wait()
	close(s.stopped)
	return nil
}

// Get returns the status of key.
func (s *Store) Get(key events.Key) (Status, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	key = key.Canonical()
	h, ok := s.handles.Lookup(key)
	if !ok || s.entries.At(h).deleted {
		return Status{}, false
	}
	return s.statusLocked(h, key, s.entries.At(h)), true
}

// List returns every status, sorted by key.
func (s *Store) List() []Status {
	s.mu.RLock()
	out := make([]Status, 0, s.handles.Len())
	for h, key := range s.handles.All {
		if e := s.entries.At(h); !e.deleted {
			out = append(out, s.statusLocked(h, key, e))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Status) int { return events.CompareKeys(a.Key, b.Key) })
	return out
}

func (s *Store) onChanged(e events.ResourceChanged) {
	s.update(e.Key, e.CorrelationID, func(st *Status) {
		st.State = StatePending
		st.NextRetry = time.Time{}
	})
}

func (s *Store) onStarted(e events.ReconciliationStarted) {
	s.update(e.Key, e.CorrelationID, func(st *Status) {
		st.State = StateReconciling
		st.NextRetry = time.Time{}
	})
}

func (s *Store) onSynced(e events.ResourceSynced) {
	if e.Deleted {
		s.update(e.Key, e.CorrelationID, nil)
		return
	}
	s.update(e.Key, e.CorrelationID, func(st *Status) {
		st.State = StateSynced
		st.ObservedHash = e.Hash
		st.LastReconcileTime = e.Time
		st.LastError = ""
		st.RetryCount = 0
		st.NextRetry = time.Time{}
	})
}

func (s *Store) onFailed(e events.ResourceFailed) {
	lastError := redact.String(e.Error) // not under the lock update holds
	s.update(e.Key, e.CorrelationID, func(st *Status) {
		st.State = StateError
		if !e.WillRetry() && !e.Permanent {
			st.State = StateFailed // retries used up
		}
		st.LastReconcileTime = e.Time
		st.LastError = lastError
		st.RetryCount = max(e.Attempt-1, 0)
		st.NextRetry = e.NextRetry
	})
}

// update applies change to key's status, under the lock (change must be
// quick); a deleted or unknown key starts afresh. A nil change marks the key
// deleted: its status keeps only the key and correlation ID. update queues
// the key's write unless the key is queued or being written already.
func (s *Store) update(key events.Key, correlationID string, change func(*Status)) {
	key = key.Canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	h, _ := s.handles.Intern(key)
	e := s.entries.At(h)
	st := &s.changing
	*st = Status{}
	if !e.deleted && change != nil {
		*st = s.statusLocked(h, key, e)
	}
	e.deleted = change == nil
	if change != nil {
		change(st)
	}
	st.CorrelationID = correlationID
	st.ReconcileDisabled = len(s.disabled) > 0 && s.disabled[key.Kind]
	s.setLocked(h, e, st)
	s.changedLocked(h, e)
}

// changedLocked notes that h's entry e changed, and queues its write
// unless it is queued or being written already. s.mu is held.
func (s *Store) changedLocked(h events.Handle, e *entry) {
	s.version++
	e.version = s.version
	if !e.writing && !e.queued {
		// Under the lock, so that the writer cannot release h between
		// the two.
		e.queued = true
		s.queued++
		s.queue.Add(h)
	}
}

// SetKindDisabled records whether the reconciliation of kind is disabled,
// and writes again the status of each of its resources that this changes
// (Status.ReconcileDisabled): a status file or custom resource then says
// why a change shows no reconcile. The controls call it when an operator
// toggles a kind. It may be called before Start.
func (s *Store) SetKindDisabled(kind string, disabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disabled[kind] == disabled {
		return
	}
	if disabled {
		s.disabled[kind] = true
	} else {
		delete(s.disabled, kind)
	}
	// Before Start no status is kept, so nothing is queued here.
	for h := range s.handles.All {
		if e := s.entries.At(h); !e.deleted && s.handles.Key(h).Kind == kind && e.reconcileDisabled != disabled {
			e.reconcileDisabled = disabled
			s.changedLocked(h, e)
		}
	}
}

// Quiescent reports whether the store has nothing to do at or before now:
// no write is queued or in progress and no retry of a failed write is due.
// wake is when the next retry is due, zero if none. A replay that steps a
// fake clock calls it, with the bus's Idle, to know when it may move the
// clock on, and to where.
func (s *Store) Quiescent(now time.Time) (quiet bool, wake time.Time) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	quiet = s.queued == 0 && s.inWrite == 0
	for _, at := range s.retryAt {
		if !at.After(now) {
			quiet = false
		} else if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	return quiet, wake
}

func (s *Store) writeLoop(ctx context.Context) {
	if s.opts.HoldWrites != nil {
		select {
		case <-s.opts.HoldWrites:
		case <-ctx.Done():
		}
	}
	for {
		h, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() == nil {
			s.sync(ctx, h)
		}
		s.queue.Done(h)
	}
}

// sync brings the written status of h's key up to its newest state.
func (s *Store) sync(ctx context.Context, h events.Handle) {
	s.mu.Lock()
	var rec *entry
	var key events.Key
	if s.handles.Held(h) {
		rec, key = s.entries.At(h), s.handles.Key(h)
	}
	delete(s.retryAt, h)
	var e snapshot
	var writtenSum uint64
	var hasWritten bool
	if rec != nil {
		if rec.queued {
			rec.queued = false
			s.queued--
		}
		// Before the write: a change made during it must neither be queued
		// now (were the write to fail, it would run again at once, ahead of
		// its backoff) nor be lost.
		rec.writing = true
		s.inWrite++
		e = snapshot{status: s.statusLocked(h, key, rec), deleted: rec.deleted, version: rec.version}
		writtenSum, hasWritten = rec.writtenSum, rec.hasWritten
	}
	s.mu.Unlock()
	if rec == nil { // deleted and its deletion written already
		s.retries.Forget(h)
		return
	}
	defer func() { // after the outcome is published and what follows queued
		s.mu.Lock()
		s.inWrite--
		s.mu.Unlock()
	}()
	var err error
	var sum uint64
	category := events.StatusWritten
	switch {
	case e.deleted:
		category = events.StatusDeleted
		err = s.write(ctx, func(w StatusWriter, wctx context.Context) error { return w.DeleteStatus(wctx, key) })
	case hasWritten && writtenSum == e.status.sum(s.seed):
		category = events.StatusUnchanged
		sum = writtenSum
	default:
		sum = e.status.sum(s.seed)
		err = s.write(ctx, func(w StatusWriter, wctx context.Context) error { return w.WriteStatus(wctx, e.status) })
		if errors.Is(err, ErrSkipped) {
			category, err = events.StatusSkipped, nil
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopping: the write was cancelled, not refused.
	case err != nil:
		s.failed(h, key, e, err)
	default:
		s.succeeded(h, key, e, sum, category)
	}
}

// write calls the writer under WriteTimeout. A memory-only store has nothing
// to write, and arms no timer for it.
func (s *Store) write(ctx context.Context, call func(StatusWriter, context.Context) error) error {
	if s.opts.Writer == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	return call(s.opts.Writer, wctx)
}

// succeeded publishes the outcome of the write of e, h's state then, whose
// Status.sum is sum.
func (s *Store) succeeded(h events.Handle, key events.Key, e snapshot, sum uint64, category string) {
	s.retries.Forget(h)
	if f := s.failing[key]; f != nil {
		delete(s.failing, key)
		s.log.Info("status write recovered", "key", key.String(), "failingFor", s.opts.Clock.Since(f.since),
			"correlationId", e.status.CorrelationID)
	}
	bus.Publish(s.bus, events.StatusSynced{Meta: events.NewMetaAt(s.opts.Clock.Now(), e.status.CorrelationID), Key: key, Category: category})

	// A change that update did not queue, because the key was being
	// written, shows here as a newer version; one made after this saw the
	// key no longer being written and queued itself. Only this goroutine
	// releases handles, so h is still key's.
	s.mu.Lock()
	rec := s.entries.At(h)
	rec.writing = false
	// A skipped write (a follower's) is not remembered as written, so the
	// same status is written once this replica may write.
	rec.writtenSum, rec.hasWritten = sum, !e.deleted && category != events.StatusSkipped
	changed := rec.version != e.version
	if !changed && e.deleted { // forget the key for good
		*rec = entry{}
		if s.handles.Release(h) {
			s.entries.Reset()
		}
	} else if changed && !rec.queued {
		rec.queued = true
		s.queued++
		s.queue.Add(h)
	}
	s.mu.Unlock()
}

func (s *Store) failed(h events.Handle, key events.Key, e snapshot, err error) {
	attempt := s.retries.NumRequeues(h) + 1
	category := CategoryOf(err)
	msg := redact.String(err.Error())
	bus.Publish(s.bus, events.StatusSyncFailed{
		Meta: events.NewMetaAt(s.opts.Clock.Now(), e.status.CorrelationID), Key: key, Category: category, Error: msg, Attempt: attempt,
	})
	s.logFailure(key, e.status.CorrelationID, attempt, category, msg)
	// AddRateLimited, with the delay kept for Quiescent.
	delay := s.retries.When(h)
	s.mu.Lock()
	s.retryAt[h] = s.opts.Clock.Now().Add(delay)
	s.mu.Unlock()
	if s.retried != nil {
		s.retried.Inc()
	}
	// The entry stays writing until this retry writes it, so h is not
	// released meanwhile. A retry that fires once the queue is shut down
	// adds nothing.
	t := s.opts.Clock.NewTimer(delay)
	go func() {
		select {
		case <-t.C():
			s.queue.Add(h)
		case <-s.stopped:
			t.Stop()
		}
	}()
}

// logFailure logs a key's first failure and then one failure per interval,
// the interval doubling up to failureLogMaxInterval, so that a key failing
// for hours neither floods the log nor goes quiet.
func (s *Store) logFailure(key events.Key, correlationID string, attempt int, category, msg string) {
	now := s.opts.Clock.Now()
	f := s.failing[key]
	switch {
	case f == nil:
		f = &failureLog{since: now, interval: failureLogFirstInterval}
		s.failing[key] = f
	case now.Before(f.nextLog):
		f.suppressed++
		return
	default:
		f.interval = min(2*f.interval, failureLogMaxInterval)
	}
	f.nextLog = now.Add(f.interval)
	s.log.Warn("status write failed; retrying with backoff", "key", key.String(), "attempt", attempt,
		"category", category, "error", msg, "failingFor", now.Sub(f.since), "unloggedFailures", f.suppressed,
		"correlationId", correlationID)
	f.suppressed = 0
}
