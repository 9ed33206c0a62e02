package debouncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// DefaultInterval is the refractory period when Options.Interval is zero.
const DefaultInterval = 500 * time.Millisecond

// lagChanges is how many events wait for the debouncer before its mailbox
// coalesces them by key (bus.Delivery.Lazy): a change folds into its key's
// state idempotently, so while the debouncer keeps up nothing is hashed
// for it under the publish lock.
const lagChanges = 4096

// maxBatchKeys bounds the keys that fired at once but wait for the mailbox
// to empty before they are published. A debouncer that never catches up
// with its mailbox still publishes, and holds bounded memory.
const maxBatchKeys = 1024

// idleRelease is how long the debouncer stays without a key in its
// refractory period, after a burst grew its tables, before it lets them go.
// The interner keeps a burst's table for the next fill of a stream
// (events.Interner), and only a small fill lets it go: at rest after a
// large cold start, with no edit to make that fill, the table, the records
// and the deadline queue would be held for the daemon's life. A
// stream's fills come within a few refractory periods of each other, far
// less than this.
const idleRelease = 10 * time.Second

// Options configures a Debouncer. The zero value is the default.
type Options struct {
	// Interval is the refractory period of each key: after a key triggers,
	// its changes wait until Interval has passed and then trigger once.
	// Default DefaultInterval; negative is an error.
	Interval time.Duration
	// Logger receives start, stop and index-synced messages. Default
	// slog.Default().
	Logger *slog.Logger
	// Clock is what the debouncer reads the time from and arms its timer
	// on. Default: the real clock. A replay outside testing/synctest steps
	// a fake one.
	Clock clock.WithTicker
}

// Debouncer turns ResourceChanged, IndexSynchronized and ServiceStateChanged
// into ReconciliationTriggered. See the package documentation for its
// guarantees. Make one with New and run it with Start.
type Debouncer struct {
	bus      *bus.Bus
	interval time.Duration
	log      *slog.Logger
	clock    clock.WithTicker

	started   atomic.Bool
	attached  bus.Attachment
	coalesced atomic.Uint64

	// mu guards what follows. The subscription's handlers and the timer loop
	// in Start share it. Triggers are published under it, which is safe
	// because Publish never blocks and never calls back into the debouncer,
	// and it keeps the order of triggers that of the state changes.
	mu sync.Mutex
	// handles and recs are the keys in their refractory period and their
	// records, indexed by handle: a key's three strings are hashed once a
	// change, and the deadline queue moves 4-byte handles.
	handles   events.Interner
	recs      events.Records[keyState]
	deadlines deadlineQueue
	seq       uint64
	timer     clock.Timer // fires at the earliest deadline; one for all keys
	armedFor  time.Time   // the deadline the timer is set for; zero if stopped
	releaseAt time.Time   // when the tables a burst grew go, if still unused; zero if they are not kept
	synced    map[events.Source]bool
	held      map[events.Source]*keySet // changes held until their source syncs
	batches   []batch                   // keys fired at once, not yet published
	batched   int                       // keys in batches
	flushes   uint64                    // flushes so far, plus one: see keyState.batchFlush
}

// New returns a debouncer publishing on b. It subscribes only in Start.
func New(b *bus.Bus, opts Options) (*Debouncer, error) {
	if b == nil {
		return nil, errors.New("debouncer: nil bus")
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("debouncer: negative interval %v", opts.Interval)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	d := &Debouncer{
		clock:    opts.Clock,
		bus:      b,
		interval: opts.Interval,
		log:      opts.Logger.With("component", "debouncer"),
		synced:   map[events.Source]bool{},
		held:     map[events.Source]*keySet{},
		flushes:  1,
	}
	return d, nil
}

// Name identifies the component.
func (d *Debouncer) Name() string { return "debouncer" }

// SubscriptionReady is closed once Start has subscribed to the bus.
func (d *Debouncer) SubscriptionReady() <-chan struct{} { return d.attached.SubscriptionReady() }

// BusySince reports since when the debouncer has been handling one event, if
// it is handling one.
func (d *Debouncer) BusySince() (time.Time, bool) { return d.attached.BusySince() }

// Quiescent reports whether the debouncer has nothing to do at or before
// now, and when its timer will next fire (zero if it is stopped). A replay
// that steps a fake clock calls it, with the bus's Idle, to know when it
// may move the clock on, and to where.
func (d *Debouncer) Quiescent(now time.Time) (quiet bool, wake time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.batches) > 0 {
		return false, d.armedFor
	}
	return d.armedFor.IsZero() || d.armedFor.After(now), d.armedFor
}

// Coalesced counts changes that did not trigger on their own: they were
// folded into a trigger already pending (or held) for their key.
func (d *Debouncer) Coalesced() uint64 { return d.coalesced.Load() }

// Start subscribes to the bus and fires refractory-end triggers until ctx is
// done; then it unsubscribes and returns nil. A Debouncer starts once.
func (d *Debouncer) Start(ctx context.Context) error {
	if !d.started.CompareAndSwap(false, true) {
		return errors.New("debouncer: already started")
	}
	d.mu.Lock()
	d.timer = d.clock.NewTimer(time.Hour)
	d.timer.Stop()
	d.mu.Unlock()

	sub, err := d.bus.Subscribe(bus.SubscriberOptions{
		Name:     d.Name(),
		Delivery: bus.Coalescing(mailboxKey).Lazy(lagChanges),
		Handlers: []bus.Handler{
			bus.On(d.onResourceChanged),
			bus.On(d.onServiceStateChanged),
			bus.On(d.onIndexSynchronized),
		},
		OnIdle: d.onIdle,
	})
	if err != nil {
		return fmt.Errorf("debouncer: subscribe: %w", err)
	}
	d.attached.Attach(sub)
	d.log.Debug("debouncer started", "interval", d.interval)

	for {
		select {
		case <-ctx.Done():
			sub.Unsubscribe()
			<-sub.Done() // OnIdle may still run once; let it finish first.
			d.mu.Lock()
			d.timer.Stop()
			d.mu.Unlock()
			d.log.Debug("debouncer stopped")
			return nil
		case <-d.timer.C():
			d.fireDue()
		}
	}
}

// mailboxKey coalesces pending events of one type about one key (and
// IndexSynchronized per source), keeping a manual change apart from other
// changes so that a file change cannot swallow a manual request.
func mailboxKey(e events.Event) bus.CoalesceKey {
	k := bus.ByTypeAndResourceKey(e)
	if c, ok := e.(events.ResourceChanged); ok && c.Source == events.SourceManual {
		k.Tag = "manual"
	}
	return k
}

// heldUntilSynced says whether changes from source wait for its
// IndexSynchronized.
func heldUntilSynced(source events.Source) bool {
	return source == events.SourceFilesystem || source == events.SourceKubernetes
}

func (d *Debouncer) onResourceChanged(e events.ResourceChanged) {
	key := e.Key.Canonical()
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	switch {
	case e.Source == events.SourceManual:
		d.fire(key, e.CorrelationID, events.ReasonManual, now)
	case heldUntilSynced(e.Source) && !d.synced[e.Source]:
		d.hold(e.Source, key, e.CorrelationID)
	default:
		d.change(key, e.CorrelationID, events.ReasonChange, now)
	}
	d.handled(now)
}

func (d *Debouncer) onServiceStateChanged(e events.ServiceStateChanged) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	d.change(e.Key.Canonical(), e.CorrelationID, events.ReasonServiceState, now)
	d.handled(now)
}

func (d *Debouncer) onIndexSynchronized(e events.IndexSynchronized) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	d.synced[e.Source] = true
	held := d.held[e.Source]
	delete(d.held, e.Source)
	n := 0
	if held != nil {
		n = len(held.list)
		for _, tk := range held.list {
			d.fire(tk.Key, tk.CorrelationID, events.ReasonIndexSynced, now)
		}
	}
	// The trigger is due even with no keys: it asks for a full pass.
	if b := &d.batches[d.batchFor(events.ReasonIndexSynced)]; b.correlationID == "" {
		b.correlationID = e.CorrelationID
	}
	d.log.Info("index synchronized; firing held changes", "source", e.Source, "keys", n)
	d.handled(now)
}

func (d *Debouncer) onIdle() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flush(d.clock.Now())
}

// change handles a change of key: it fires at once unless the key is in its
// refractory period, where it waits for the period's end.
func (d *Debouncer) change(key events.Key, correlationID string, reason events.Reason, now time.Time) {
	h, added := d.handles.Intern(key) // one lookup: a key out of its period fires
	if added {
		d.fireHandle(h, true, key, correlationID, reason, now)
		return
	}
	s := d.recs.At(h)
	if s.pending {
		d.coalesced.Add(1)
	}
	s.runtimeOnly = reason == events.ReasonServiceState && (!s.pending || s.runtimeOnly)
	s.pending, s.correlationID = true, correlationID
}

// hold keeps a change until its source has synced.
func (d *Debouncer) hold(source events.Source, key events.Key, correlationID string) {
	set := d.held[source]
	if set == nil {
		set = &keySet{}
		d.held[source] = set
	}
	if set.add(key, correlationID) {
		d.coalesced.Add(1)
	}
}

// fire triggers key at once, covering any change of it that was pending,
// and starts its refractory period.
func (d *Debouncer) fire(key events.Key, correlationID string, reason events.Reason, now time.Time) {
	h, added := d.handles.Intern(key)
	d.fireHandle(h, added, key, correlationID, reason, now)
}

// fireHandle is fire for key's handle h, just given (added) or held since
// the key's period began.
func (d *Debouncer) fireHandle(h events.Handle, added bool, key events.Key, correlationID string, reason events.Reason, now time.Time) {
	if added {
		*d.recs.At(h) = keyState{}
	} else if s := d.recs.At(h); s.pending {
		d.coalesced.Add(1)
	}
	d.startPeriod(h, now)
	s := d.recs.At(h)
	i := d.batchFor(reason)
	b := &d.batches[i]
	if s.batchFlush == d.flushes {
		if int(s.batchIdx) == i {
			// Fired twice before its batch went: one place, the newest
			// chain, as a deduplicated list keeps it.
			b.keys[s.batchPos].CorrelationID = correlationID
			return
		}
		b.mixed = true
	}
	s.batchFlush, s.batchIdx, s.batchPos = d.flushes, int32(i), int32(len(b.keys))
	b.keys = append(b.keys, events.TriggeredKey{Key: key, CorrelationID: correlationID})
	d.batched++
}

// startPeriod starts h's refractory period at now, with nothing pending;
// an entry of a period it cut short goes stale.
func (d *Debouncer) startPeriod(h events.Handle, now time.Time) {
	d.seq++
	s := d.recs.At(h)
	s.seq, s.pending, s.runtimeOnly, s.correlationID = d.seq, false, false, ""
	d.deadlines.push(deadline{at: now.Add(d.interval), seq: d.seq, h: h})
	if d.deadlines.len() > 2*d.handles.Len()+64 {
		d.deadlines.compact(d.live)
	}
}

// live reports whether e is the end of its key's current period. seq is
// never reused, so an entry of a handle since released, or given to
// another key, is never live.
func (d *Debouncer) live(e deadline) bool {
	return d.handles.Held(e.h) && d.recs.At(e.h).seq == e.seq
}

// nextDeadline drops stale entries from the queue's front and returns the
// earliest live one, if any.
func (d *Debouncer) nextDeadline() (deadline, bool) {
	for d.deadlines.len() > 0 {
		if e := d.deadlines.front(); d.live(e) {
			return e, true
		}
		d.deadlines.pop()
	}
	return deadline{}, false
}

// batchFor returns the index of reason's batch, making it if need be.
func (d *Debouncer) batchFor(reason events.Reason) int {
	for i := range d.batches {
		if d.batches[i].reason == reason {
			return i
		}
	}
	d.batches = append(d.batches, batch{reason: reason})
	return len(d.batches) - 1
}

// handled ends the handling of one event: the timer follows the earliest
// deadline, and an oversized batch is published without waiting for idle.
func (d *Debouncer) handled(now time.Time) {
	d.rearm(now)
	if d.batched >= maxBatchKeys {
		d.flush(now)
	}
}

// flush publishes the keys fired at once, one trigger per reason.
func (d *Debouncer) flush(now time.Time) {
	for i, b := range d.batches {
		bus.Publish(d.bus, trigger(b.reason, b.keys, !b.mixed, b.correlationID, now))
		d.batches[i] = batch{}
	}
	d.batches = d.batches[:0]
	d.batched = 0
	d.flushes++
}

// fireDue ends every refractory period that is due: a key with a pending
// change fires and starts a new period, any other key is forgotten, its
// handle given back (the table a burst grew goes once the burst is over;
// see events.Interner). Keys due together share one trigger.
func (d *Debouncer) fireDue() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	d.armedFor = time.Time{} // the timer has fired
	// Keys whose pending changes all came from running services end their
	// period as a service-state trigger, the rest as refractory-end.
	var changed, runtime []events.TriggeredKey
	for {
		e, ok := d.nextDeadline()
		if !ok || e.at.After(now) {
			break
		}
		d.deadlines.pop()
		h, s := e.h, d.recs.At(e.h)
		if !s.pending {
			*s = keyState{}
			if d.handles.Release(h) {
				// No key is held: every entry left is stale.
				d.recs.Reset()
				d.deadlines.reset()
			}
			continue
		}
		tk := events.TriggeredKey{Key: d.handles.Key(h), CorrelationID: s.correlationID}
		if s.runtimeOnly {
			runtime = append(runtime, tk)
		} else {
			changed = append(changed, tk)
		}
		d.startPeriod(h, now)
	}
	if len(changed) > 0 {
		bus.Publish(d.bus, trigger(events.ReasonRefractoryEnd, changed, true, "", now))
	}
	if len(runtime) > 0 {
		bus.Publish(d.bus, trigger(events.ReasonServiceState, runtime, true, "", now))
	}
	d.rearm(now)
}

// rearm sets the timer for the earliest deadline; with no key in its
// refractory period, for the release of the tables a burst grew
// (idleRelease), or it stops the timer when there are none.
func (d *Debouncer) rearm(now time.Time) {
	next, ok := d.nextWake(now)
	if !ok {
		if !d.armedFor.IsZero() {
			d.timer.Stop()
			d.armedFor = time.Time{}
		}
		return
	}
	if next.Equal(d.armedFor) {
		return
	}
	d.timer.Reset(next.Sub(now))
	d.armedFor = next
}

// nextWake returns when the timer is next due: the earliest refractory end,
// else the release of the tables a burst grew, idleRelease after the last
// period ended. Once that instant has come, it releases them, and there is
// nothing left to wake for.
func (d *Debouncer) nextWake(now time.Time) (time.Time, bool) {
	if e, ok := d.nextDeadline(); ok {
		d.releaseAt = time.Time{} // in use: a later quiet starts afresh
		return e.at, true
	}
	switch {
	case !d.handles.KeepsBurst():
		d.releaseAt = time.Time{}
		return time.Time{}, false
	case d.releaseAt.IsZero():
		d.releaseAt = now.Add(idleRelease)
	case !now.Before(d.releaseAt):
		d.releaseBurst()
		return time.Time{}, false
	}
	return d.releaseAt, true
}

// releaseBurst lets go of the tables a burst grew: the interner's, the
// records and the deadline queue. No key is in its period.
func (d *Debouncer) releaseBurst() {
	d.log.Debug("idle since a burst; releasing its tables", "handles", d.handles.Cap())
	d.handles = events.Interner{}
	d.recs.Reset()
	d.deadlines.reset()
	d.releaseAt = time.Time{}
}
