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

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/keyqueue"
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
	backoff *JitteredBackoff[events.Handle] // the policy; each key's streak is in its record

	mu    sync.Mutex
	queue *keyqueue.Queue // nil until Start
	// handles and recs are the keys with pending work, a delay, a worker
	// or a Failed tombstone, and their records, indexed by handle.
	handles  events.Interner
	recs     events.Records[keyState]
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
	realClock        bool // Options.Clock is clock.RealClock: its Now is time.Now
	active           atomic.Int32
	panics           atomic.Uint64
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
		backoff:          NewJitteredBackoff[events.Handle](opts.BackoffBase, opts.BackoffMax, opts.Jitter, opts.Rand),
		disabled:         map[string]bool{},
		resyncRequested:  make(chan struct{}, 1),
		reconcilingSince: make([]atomic.Int64, opts.Workers),
		born:             time.Now(),
		realClock:        isRealClock(opts.Clock),
	}, nil
}

func isRealClock(c clock.WithTicker) bool {
	_, real := c.(clock.RealClock)
	return real
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

	queue := keyqueue.New(keyqueue.Config{
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
	for h := range c.handles.All { // triggered before Start
		if c.recs.At(h).pending != noTrigger {
			c.addLocked(h)
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

func (c *Coordinator) work(ctx context.Context, id int) {
	for {
		h, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		settled := false
		if ctx.Err() == nil { // after ShutDown, Get still drains what is queued
			settled = c.process(ctx, id, h)
		}
		// One hold of the lock ends it all: the reconcile in flight, the
		// worker's hold of the handle, and the record if nothing needs it.
		// Done comes after the outcome is published, so the key's next
		// reconcile starts after it.
		c.mu.Lock()
		if settled {
			c.inFlight--
		}
		c.queue.Done(h)
		if c.handles.Held(h) {
			c.recs.At(h).held = false
			c.releaseIfIdle(h)
		}
		c.mu.Unlock()
	}
}

// process reconciles h's key if it is due, and reports whether it claimed
// it: the reconcile is then in flight until the worker ends it.
func (c *Coordinator) process(ctx context.Context, id int, h events.Handle) (claimed bool) {
	req, ok := c.claim(h)
	if !ok {
		return false
	}
	key := req.Key
	rec, ok := c.reg.Get(key.Kind)
	if !ok {
		c.settle(ctx, h, req, reconcilers.Result{Err: reconcilers.Permanent(fmt.Errorf("no reconciler registered for kind %q", key.Kind))}, c.opts.Clock.Now(), 0, "")
		c.mu.Lock()
		c.recs.At(h).exists = false // no reconciler will say when it goes: keep nothing
		c.mu.Unlock()
		return true
	}
	var hash string
	if c.opts.Hash != nil {
		hash = c.opts.Hash(key) // before Reconcile reads the definition: it reads this one or a newer
	}
	// Two readings of the clock a reconcile, its start and its end: each
	// is a few percent of a no-op reconcile. The stall watch and the
	// deadline are on real time (Options.Clock may be fake), which is the
	// start's reading when the clock is the real one.
	realStart := time.Now()
	start := realStart
	if !c.realClock {
		start = c.opts.Clock.Now()
	}
	bus.Publish(c.bus, events.ReconciliationStarted{Meta: events.NewMetaAt(start, req.CorrelationID), Key: key, Attempt: req.Attempt})
	c.reconcilingSince[id].Store(int64(realStart.Sub(c.born)) + 1)
	c.active.Add(1)
	var res reconcilers.Result
	interrupted := false
	if err := c.recovered(key.Kind, func() {
		rctx := newReconcileContext(ctx, realStart.Add(c.opts.ReconcileTimeout), errReconcileTimeout)
		defer rctx.end()
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
		return true
	}
	end := c.opts.Clock.Now()
	c.settle(ctx, h, req, res, end, end.Sub(start), hash)
	return true
}

// errReconcileTimeout is the cause of a reconcile's context ending at
// ReconcileTimeout, which tells it apart from the coordinator stopping.
var errReconcileTimeout = errors.New("reconcile timeout")

// claim decides whether h's key, just taken from the queue, is due, and if
// so takes its pending request; the handle is held by this worker until
// Done either way. A key comes out of the workqueue that is not due when a
// delayed add was superseded: a change reset the backoff of a key that
// waited for a retry, or a newer retry replaced an older one. The reconcile
// that superseded it answered it already.
func (c *Coordinator) claim(h events.Handle) (reconcilers.Request, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.handles.Held(h) {
		return reconcilers.Request{}, false
	}
	st := c.recs.At(h)
	st.queued, st.held = false, true
	if wake := st.wakeAt(); st.pending == noTrigger && (wake.IsZero() || c.opts.Clock.Now().Before(wake)) {
		return reconcilers.Request{}, false // wakeLoop queues it again when due
	}
	key := c.handles.Key(h)
	if c.disabled[key.Kind] {
		*st = keyState{held: true} // released once Done
		c.log.Debug("pending work of a disabled kind dropped", "key", key)
		return reconcilers.Request{}, false
	}
	st.pending, st.retrying = noTrigger, false
	st.clearWake()
	c.inFlight++ // until process returns
	return reconcilers.Request{Key: key, Attempt: st.failures() + 1, CorrelationID: st.corr}, true
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
