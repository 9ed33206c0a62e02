package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/redact"
)

// Name is the coordinator's component name, its bus subscription's name and
// its workqueue's metrics name.
const Name = "coordinator"

// Results of a finished reconcile, as controller-runtime names them in
// controller_runtime_reconcile_total.
const (
	ResultSuccess      = "success"
	ResultError        = "error" // a panic included
	ResultRequeueAfter = "requeue_after"
)

// Observer is told of every finished reconcile by the worker that ran it,
// before its outcome is published: counted at the source, reconcile metrics
// are exact, as they could not be from a lossy bus subscriber. result is one
// of the Result constants and took how long Reconcile ran. A key of a kind
// with no reconciler fails without running, which is observed as an error
// that took 0. A reconcile interrupted because the coordinator stops did
// not finish and is not observed. ObserveReconcile must be quick and safe
// for concurrent use.
type Observer interface {
	ObserveReconcile(kind, result string, took time.Duration)
}

// Options configures a Coordinator. The zero value of every field is its
// default.
type Options struct {
	// Workers is how many keys are reconciled at once. Default 2.
	Workers int
	// ReconcileTimeout bounds each Reconcile and each List call. Default 30s.
	ReconcileTimeout time.Duration
	// BackoffBase is the delay before the first retry of a failed key; it
	// doubles with every further failure. Default 1s.
	BackoffBase time.Duration
	// BackoffMax caps the retry delay, jitter included. Default 5m.
	BackoffMax time.Duration
	// Jitter stretches each retry delay by a random factor in [0, Jitter);
	// where that would pass BackoffMax, BackoffMax is shrunk by such a
	// factor (at most 1) instead. Default 0.1; negative means none.
	Jitter float64
	// MaxRetries is how many times a key is retried after its first
	// failure before the failure is final. Default 5; negative means none.
	MaxRetries int
	// ResyncPeriod is how often every enabled kind's keys are reconciled
	// whether or not anything changed. Default 10m; negative disables the
	// periodic resync (Resync and index-synced triggers still start passes).
	ResyncPeriod time.Duration
	// ResyncQPS paces resync passes, in keys enqueued per second, with a
	// burst of as many. Default 100.
	ResyncQPS float64
	// MetricsProvider, if set, receives the workqueue's depth, adds,
	// retries and latency metrics under the name "coordinator".
	MetricsProvider workqueue.MetricsProvider
	// Observer, if set, is told of every finished reconcile.
	Observer Observer
	// Hash, if set, returns the content hash of key's definition in force
	// (resources.Entry.Hash). It is read as a reconcile begins and named
	// in its ResourceSynced, so that a reader can tell whether a Synced
	// covers the definition it sees now or an older one.
	Hash func(key events.Key) string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Rand returns numbers in [0, 1) for the jitter. Default
	// math/rand/v2's Float64.
	Rand func() float64
	// NewCorrelationID mints the correlation ID of a chain the coordinator
	// starts itself: a resync pass, a manual Trigger, a trigger that carries
	// none. Default events.NewCorrelationID. A replay sets a deterministic
	// source so that two replays of one trace are byte-identical.
	NewCorrelationID func() string
	// Clock is what the coordinator, its workqueue's delays, the resync
	// ticker and the resync pacing read the time from and wait on; events
	// are stamped with it. Default: the real clock. A replay outside
	// testing/synctest steps a fake one. ReconcileTimeout stays on the
	// real clock: it bounds real work, and a stepped clock stands still
	// while a reconcile runs.
	Clock clock.WithTicker
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Workers < 0:
		return o, fmt.Errorf("coordinator: Workers is %d; it must not be negative", o.Workers)
	case o.ReconcileTimeout < 0:
		return o, fmt.Errorf("coordinator: ReconcileTimeout is %s; it must not be negative", o.ReconcileTimeout)
	case o.BackoffBase < 0 || o.BackoffMax < 0:
		return o, fmt.Errorf("coordinator: BackoffBase %s and BackoffMax %s must not be negative", o.BackoffBase, o.BackoffMax)
	case o.ResyncQPS < 0 || math.IsNaN(o.ResyncQPS) || math.IsInf(o.ResyncQPS, 0):
		return o, fmt.Errorf("coordinator: ResyncQPS is %v; it must be a positive number", o.ResyncQPS)
	case math.IsNaN(o.Jitter) || math.IsInf(o.Jitter, 0):
		return o, fmt.Errorf("coordinator: Jitter is %v; it must be a number", o.Jitter)
	}
	o.Workers = orDefault(o.Workers, 2)
	o.ReconcileTimeout = orDefault(o.ReconcileTimeout, 30*time.Second)
	o.BackoffBase = orDefault(o.BackoffBase, time.Second)
	o.BackoffMax = orDefault(o.BackoffMax, 5*time.Minute)
	o.Jitter = orDefault(o.Jitter, 0.1)
	o.MaxRetries = max(orDefault(o.MaxRetries, 5), 0)
	o.ResyncPeriod = orDefault(o.ResyncPeriod, 10*time.Minute)
	o.ResyncQPS = orDefault(o.ResyncQPS, 100)
	if o.BackoffMax < o.BackoffBase {
		return o, fmt.Errorf("coordinator: BackoffMax %s is below BackoffBase %s", o.BackoffMax, o.BackoffBase)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.NewCorrelationID == nil {
		o.NewCorrelationID = events.NewCorrelationID
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}

// orDefault returns v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Coordinator hands triggered keys to their kind's reconciler through a
// keyed work queue. Make one with New and run it with Start.
type Coordinator struct {
	bus     *bus.Bus
	reg     *reconcilers.Registry
	opts    Options
	log     *slog.Logger
	backoff *JitteredBackoff[events.Key]

	mu       sync.Mutex
	queue    workqueue.TypedInterface[events.Key] // nil until Start
	keys     map[events.Key]*keyState             // keys with pending work, and Failed ones
	keysPeak int                                  // the most keys since keys was made
	disabled map[string]bool
	// For Quiescent: reconciles claimed and not settled; resync passes
	// requested or running; until when a pass waits for its pacing, and
	// when the resync ticker fires next (zero if none).
	inFlight   int
	resyncs    int
	pacedUntil time.Time
	nextTick   time.Time
	// wake fires when the earliest wakeAt of a key is due, at armedFor
	// (zero: not armed); wakeLoop then queues the keys due. Delays are
	// timed here, on the coordinator's clock and armed before the reconcile
	// that set them counts as settled, not with the workqueue's AddAfter:
	// its waiting goroutine reads the clock and arms its timer later, on
	// its own, so a replay that steps the clock in between (the
	// coordinator being quiescent by then) had the timer set past the
	// retry, which then never came.
	wake     clock.Timer
	armedFor time.Time
	wakes    wakeHeap                // the delays, earliest first; some stale
	delays   uint64                  // wakeSeq of the newest delay
	retries  workqueue.CounterMetric // retries and requeues armed, as the delaying queue counted them
	// indexSynced holds the keys of index-synced triggers until the
	// resync pass they start, which skips them: they were enqueued from
	// the complete listing a moment before.
	indexSynced map[events.Key]bool
	// unpaced makes the next resync pass enqueue its keys at once
	// (ReconcileAll).
	unpaced bool

	started         atomic.Bool
	attached        bus.Attachment
	resyncRequested chan struct{} // capacity 1: at most one pass waits

	// reconcilingSince is per worker 1 + nanoseconds after born at which
	// its Reconcile began, 0 when idle: offsets keep the monotonic clock.
	born             time.Time
	reconcilingSince []atomic.Int64
	active           atomic.Int32
	panics           atomic.Uint64
}

// keyState is what the coordinator knows of a key with pending work, or
// of a Failed one. The workqueue dedups keys but cannot say why one came
// out: this can.
type keyState struct {
	// corr is the correlation ID of the key's newest trigger.
	corr string
	// pending is the strongest trigger that asked for a reconcile now;
	// noTrigger if none did.
	pending trigger
	// wakeAt is when a retry or a requeue is due; zero if none is.
	wakeAt time.Time
	// wakeSeq orders keys due at one instant: the first delayed is the
	// first queued, so that a replay's output does not depend on map order.
	wakeSeq uint64
	// retrying says wakeAt is a backoff retry, which runtime events must
	// not bypass.
	retrying bool
	// failed is the tombstone of a key whose retries ran out: it stays
	// Failed until a change, a manual trigger or a resync, whatever runtime
	// triggers say. A failed key has nothing pending and no wakeAt. (A
	// permanent error leaves no tombstone: it is an error of the definition,
	// which retrying cannot fix, while what runs may still change and need
	// reconciling, such as a crash of the last good server.)
	failed bool
}

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

// New returns a coordinator for the reconcilers in reg. It does nothing
// until Start.
func New(b *bus.Bus, reg *reconcilers.Registry, opts Options) (*Coordinator, error) {
	if b == nil || reg == nil {
		return nil, errors.New("coordinator: a bus and a registry are required")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Coordinator{
		bus:              b,
		reg:              reg,
		opts:             opts,
		log:              opts.Logger.With("component", Name),
		backoff:          NewJitteredBackoff[events.Key](opts.BackoffBase, opts.BackoffMax, opts.Jitter, opts.Rand),
		keys:             map[events.Key]*keyState{},
		disabled:         map[string]bool{},
		resyncRequested:  make(chan struct{}, 1),
		reconcilingSince: make([]atomic.Int64, opts.Workers),
		born:             time.Now(),
	}, nil
}

// Name returns "coordinator".
func (c *Coordinator) Name() string { return Name }

// SubscriptionReady is closed once Start has subscribed to the bus.
func (c *Coordinator) SubscriptionReady() <-chan struct{} { return c.attached.SubscriptionReady() }

// Start subscribes to ReconciliationTriggered, runs the workers and the
// resync loop, and blocks until ctx is done. Then it unsubscribes, shuts the
// queue down, cancels the reconciles in flight and waits for them. It
// returns nil, or an error if it could not start.
func (c *Coordinator) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("coordinator: already started")
	}
	sub, err := c.bus.Subscribe(bus.SubscriberOptions{
		Name: Name,
		// One pending trigger per reason: a TriggerMerger keeps only the
		// newest reason, and a change folded into a service-state trigger
		// would lose its backoff reset (or an index-synced one its resync).
		// The merger accumulates in place, so a burst of single-key
		// triggers costs the publishers O(1) per key.
		Delivery: bus.Coalescing(func(e events.Event) string {
			return string(e.(events.ReconciliationTriggered).Reason)
		}).WithMerge(func(pending events.Event) bus.Merger {
			return events.NewTriggerMerger(pending.(events.ReconciliationTriggered))
		}),
		Handlers: []bus.Handler{bus.On(c.onTrigger)},
	})
	if err != nil {
		return fmt.Errorf("coordinator: subscribe: %w", err)
	}

	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[events.Key]{
		Name:            Name,
		MetricsProvider: c.opts.MetricsProvider,
		Clock:           c.opts.Clock,
	})
	c.mu.Lock()
	c.queue = queue
	c.wake = c.opts.Clock.NewTimer(time.Hour)
	c.wake.Stop()
	if c.opts.MetricsProvider != nil {
		c.retries = c.opts.MetricsProvider.NewRetriesMetric(Name)
	}
	for key, st := range c.keys { // triggered before Start
		if st.pending != noTrigger {
			queue.Add(key)
		}
	}
	// The resync ticker runs from here, before the coordinator says it is
	// subscribed: Quiescent reports its next tick from then on, so a
	// replay stepping a fake clock never takes it for idle with no tick
	// to come.
	var resync clock.Ticker
	if c.opts.ResyncPeriod > 0 {
		resync = c.opts.Clock.NewTicker(c.opts.ResyncPeriod)
		c.nextTick = c.opts.Clock.Now().Add(c.opts.ResyncPeriod)
	}
	c.mu.Unlock()
	c.attached.Attach(sub)

	var wg sync.WaitGroup
	for id := range c.opts.Workers {
		wg.Go(func() { c.work(ctx, id) })
	}
	wg.Go(func() { c.resyncLoop(ctx, resync) })
	wg.Go(func() { c.wakeLoop(ctx) })
	<-ctx.Done()
	sub.Unsubscribe()
	queue.ShutDown()
	wg.Wait()
	<-sub.Done()
	return nil
}

// BusySince reports since when the coordinator has made no progress, if
// it is stuck: its subscription has been handling one trigger, or every
// worker has been inside Reconcile, since then. A reconciler that honours
// its deadline is done within ReconcileTimeout, so a stall threshold should
// exceed it.
func (c *Coordinator) BusySince() (time.Time, bool) {
	since, busy := c.attached.BusySince()
	var allSince int64
	for i := range c.reconcilingSince {
		ns := c.reconcilingSince[i].Load()
		if ns == 0 {
			return since, busy
		}
		allSince = max(allSince, ns)
	}
	if all := c.born.Add(time.Duration(allSince - 1)); !busy || all.Before(since) {
		since, busy = all, true
	}
	return since, busy
}

// ActiveWorkers returns how many workers are inside Reconcile now.
func (c *Coordinator) ActiveWorkers() int { return int(c.active.Load()) }

// Panics returns how many reconciler panics were recovered.
func (c *Coordinator) Panics() uint64 { return c.panics.Load() }

// Trigger reconciles keys at once, resetting their backoff, as for a
// manual trigger. Keys of disabled kinds are ignored. Before Start, the keys
// wait for it.
func (c *Coordinator) Trigger(keys ...events.Key) {
	corr := c.opts.NewCorrelationID()
	for _, key := range keys {
		c.enqueue(key, corr, events.ReasonManual)
	}
}

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
	for _, st := range c.keys {
		if st.pending != noTrigger {
			quiet = false
		}
		soonest(st.wakeAt)
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

func (c *Coordinator) onTrigger(e events.ReconciliationTriggered) {
	for tk := range e.Keys.All() {
		corr := tk.CorrelationID
		if corr == "" {
			corr = e.CorrelationID
		}
		c.enqueue(tk.Key, corr, e.Reason)
	}
	if e.Reason == events.ReasonIndexSynced {
		// The initial listing: the pass prunes what runs but is not
		// declared. What is declared was just enqueued, so the pass skips
		// it rather than reconcile every resource a second time, paced at
		// ResyncQPS (100 s of it for 10,000 resources).
		c.mu.Lock()
		if c.indexSynced == nil {
			c.indexSynced = map[events.Key]bool{}
		}
		for tk := range e.Keys.All() {
			c.indexSynced[tk.Key.Canonical()] = true
		}
		c.mu.Unlock()
		c.Resync()
	}
}

// enqueue asks for a reconcile of key now, unless its kind is disabled, the
// key waits for a backoff retry that reason may not cut short (that retry
// will come), or it has failed for good and reason may not start it afresh.
func (c *Coordinator) enqueue(key events.Key, corr string, reason events.Reason) {
	key = key.Canonical()
	if corr == "" { // so that the key's events still share one chain
		corr = c.opts.NewCorrelationID()
	}
	c.mu.Lock()
	if c.disabled[key.Kind] {
		c.mu.Unlock()
		c.log.Debug("trigger of a disabled kind ignored", "key", key, "reason", reason)
		return
	}
	defer c.mu.Unlock()
	st := c.keys[key]
	if st == nil {
		st = &keyState{}
		c.keys[key] = st
		c.keysPeak = max(c.keysPeak, len(c.keys))
	}
	t := triggerOf(reason)
	switch {
	case t == changeTrigger:
		c.backoff.Forget(key)
		st.wakeAt, st.retrying = time.Time{}, false
	case st.retrying:
		return
	case st.failed && t < resyncTrigger:
		c.log.Debug("trigger of a Failed key ignored", "key", key, "reason", reason)
		return
	}
	st.corr, st.pending, st.failed = corr, max(st.pending, t), false
	if c.queue != nil {
		c.queue.Add(key)
	}
}

func (c *Coordinator) work(ctx context.Context, id int) {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() == nil { // after ShutDown, Get still drains what is queued
			c.process(ctx, id, key)
		}
		c.queue.Done(key)
	}
}

func (c *Coordinator) process(ctx context.Context, id int, key events.Key) {
	req, ok := c.claim(key)
	if !ok {
		return
	}
	defer func() { // after the outcome is published
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	rec, ok := c.reg.Get(key.Kind)
	if !ok {
		c.settle(ctx, req, reconcilers.Result{Err: reconcilers.Permanent(fmt.Errorf("no reconciler registered for kind %q", key.Kind))}, 0, "")
		return
	}
	var hash string
	if c.opts.Hash != nil {
		hash = c.opts.Hash(key) // before Reconcile reads the definition: it reads this one or a newer
	}
	bus.Publish(c.bus, events.ReconciliationStarted{Meta: events.NewMetaAt(c.opts.Clock.Now(), req.CorrelationID), Key: key, Attempt: req.Attempt})
	start := c.opts.Clock.Now()
	c.reconcilingSince[id].Store(int64(time.Since(c.born)) + 1) // stalls are real time, like the bus's
	c.active.Add(1)
	var res reconcilers.Result
	interrupted := false
	if err := c.recovered(key.Kind, func() {
		rctx, cancel := context.WithTimeoutCause(ctx, c.opts.ReconcileTimeout, errReconcileTimeout)
		defer cancel()
		res = rec.Reconcile(rctx, req)
		interrupted = res.Err != nil && ctx.Err() != nil && context.Cause(rctx) != errReconcileTimeout
	}); err != nil {
		res = reconcilers.Result{Err: err}
	}
	c.active.Add(-1)
	c.reconcilingSince[id].Store(0)
	if interrupted {
		// Cut short because the coordinator stops: not a failure of the
		// key, so nothing is published (the status keeps showing the
		// reconcile, which the next run does again).
		c.log.Debug("reconcile interrupted by shutdown", "key", key, "correlationId", req.CorrelationID)
		return
	}
	c.settle(ctx, req, res, c.opts.Clock.Since(start), hash)
}

// retainedKeys is the most keys whose map the coordinator keeps once it is
// empty; a larger one is made afresh.
const retainedKeys = 1024

// forget drops key's state; c.mu is held. Go maps never shrink, so a map
// that a burst (a cold start of 10,000 resources) grew is made afresh once
// it is empty, rather than pinning the burst's peak for the daemon's life.
func (c *Coordinator) forget(key events.Key) {
	delete(c.keys, key)
	if len(c.keys) == 0 && c.keysPeak > retainedKeys {
		c.keys, c.keysPeak = map[events.Key]*keyState{}, 0
	}
}

// errReconcileTimeout is the cause of a reconcile's context ending at
// ReconcileTimeout, which tells it apart from the coordinator stopping.
var errReconcileTimeout = errors.New("reconcile timeout")

// claim decides whether key, just taken from the queue, is due, and if so
// takes its pending request. A key comes out of the workqueue that is not
// due when a delayed add was superseded: a change reset the backoff of a
// key that waited for a retry, or a newer retry replaced an older one. The
// reconcile that superseded it answered it already.
func (c *Coordinator) claim(key events.Key) (reconcilers.Request, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.keys[key]
	if st == nil {
		return reconcilers.Request{}, false
	}
	now := c.opts.Clock.Now()
	if st.pending == noTrigger && (st.wakeAt.IsZero() || now.Before(st.wakeAt)) {
		return reconcilers.Request{}, false // wakeLoop queues it again when due
	}
	if c.disabled[key.Kind] {
		c.forget(key)
		c.backoff.Forget(key)
		c.log.Debug("pending work of a disabled kind dropped", "key", key)
		return reconcilers.Request{}, false
	}
	st.pending, st.wakeAt, st.retrying = noTrigger, time.Time{}, false
	c.inFlight++ // until process returns
	return reconcilers.Request{Key: key, Attempt: c.backoff.NumRequeues(key) + 1, CorrelationID: st.corr}, true
}

// settle schedules what follows a reconcile, tells the observer and
// publishes the outcome.
func (c *Coordinator) settle(ctx context.Context, req reconcilers.Request, res reconcilers.Result, took time.Duration, hash string) {
	now := c.opts.Clock.Now()
	meta := events.NewMetaAt(now, req.CorrelationID)
	var outcome events.Event
	result := ResultError
	c.mu.Lock()
	st := c.keys[req.Key]
	if st == nil {
		st = &keyState{corr: req.CorrelationID}
		c.keys[req.Key] = st
		c.keysPeak = max(c.keysPeak, len(c.keys))
	}
	// A dependency that names its retry time (reconcilers.RetryAt) owns the
	// schedule and its bound, such as the supervisor's restart backoff
	// capped at minutes: MaxRetries would give up on it too soon.
	_, timed := reconcilers.RetryTime(res.Err)
	switch {
	case res.Err == nil:
		result = ResultSuccess
		c.backoff.Forget(req.Key)
		if res.RequeueAfter > 0 {
			result = ResultRequeueAfter
			c.delayLocked(req.Key, st, now.Add(res.RequeueAfter), now)
		}
		outcome = events.ResourceSynced{Meta: meta, Key: req.Key, Attempt: req.Attempt, Duration: took,
			Deleted: res.Deleted, RequeueAfter: res.RequeueAfter, Hash: hash}
	case !reconcilers.IsPermanent(res.Err) && ctx.Err() == nil && (timed || c.backoff.NumRequeues(req.Key) < c.opts.MaxRetries):
		if at, ok := reconcilers.RetryTime(res.Err); ok {
			// The reconciler knows when a retry can succeed (a server's
			// own restart backoff): an earlier one would only fail again.
			c.backoff.SetNextDelay(req.Key, at.Sub(now))
		}
		c.delayLocked(req.Key, st, now.Add(c.backoff.When(req.Key)), now)
		st.retrying = true
		// A runtime or resync trigger that arrived during the reconcile
		// waits for the retry like any other, which continues the failing
		// chain; only a change goes ahead of it.
		if st.pending < changeTrigger {
			st.pending, st.corr = noTrigger, req.CorrelationID
		}
		outcome = events.ResourceFailed{Meta: meta, Key: req.Key, Error: redact.String(res.Err.Error()), Attempt: req.Attempt,
			Duration: took, NextRetry: st.wakeAt.Round(0).UTC()}
	default: // permanent, retries used up, or timed out while stopping
		c.backoff.Forget(req.Key)
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
	if st.pending == noTrigger && st.wakeAt.IsZero() && !st.failed {
		c.forget(req.Key)
	}
	c.mu.Unlock()
	if c.opts.Observer != nil {
		c.opts.Observer.ObserveReconcile(req.Key.Kind, result, took)
	}
	c.bus.Publish(outcome)
}

// recovered runs fn, turning a panic into an error: a bug in one reconciler
// must not take the daemon down.
func (c *Coordinator) recovered(kind string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.panics.Add(1)
			msg := redact.String(fmt.Sprint(r))
			c.log.Error("reconciler panicked", "kind", kind, "panic", msg, "stack", redact.String(string(debug.Stack())))
			err = fmt.Errorf("reconciler of kind %q panicked: %s", kind, msg)
		}
	}()
	fn()
	return nil
}

// list calls kind's List under ReconcileTimeout.
func (c *Coordinator) list(ctx context.Context, kind string) ([]events.Key, error) {
	rec, ok := c.reg.Get(kind)
	if !ok {
		return nil, fmt.Errorf("no reconciler registered for kind %q", kind)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReconcileTimeout)
	defer cancel()
	var keys []events.Key
	var err error
	if perr := c.recovered(kind, func() { keys, err = rec.List(ctx) }); perr != nil {
		return nil, perr
	}
	return keys, err
}

// delayLocked schedules a reconcile of st's key at at: a retry or a
// requeue.
func (c *Coordinator) delayLocked(key events.Key, st *keyState, at, now time.Time) {
	c.delays++
	st.wakeAt, st.wakeSeq = at, c.delays
	c.pushWakeLocked(key, at, c.delays)
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
		for _, key := range due {
			c.queue.Add(key)
		}
		if !next.IsZero() {
			c.armLocked(next, now)
		}
		c.mu.Unlock()
	}
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
	for key, st := range c.keys {
		if _, known := c.reg.Get(key.Kind); st.failed && (!known || c.disabled[key.Kind] || listedKinds[key.Kind] && !listed[key]) {
			c.forget(key)
		}
	}
	c.mu.Unlock()
	c.log.Debug("resync pass done", "keys", len(listed), "correlationId", corr)
}
