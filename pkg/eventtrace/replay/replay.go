package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/statusync"
)

// Options chooses the stages a replay runs. The zero value runs none: only
// Components, if any.
type Options struct {
	// Debouncer runs the debouncer with the header's Debounce interval.
	Debouncer bool
	// Coordinator runs the coordinator with the header's ReconcileTimeout,
	// retry settings and Resync period, and one worker: see the package
	// documentation for why.
	Coordinator bool
	// Reconcilers are the coordinator's. None means the recorded outcomes:
	// a reconciler for every kind in the trace whose Reconcile returns, for
	// each key in turn, what the recording says its reconciles returned
	// (ResourceSynced: success, Deleted and RequeueAfter as recorded;
	// ResourceFailed: a permanent error, an error retried at the recorded
	// delay, or, where the recorded coordinator gave up, a plain error),
	// and success once the key's recorded outcomes are used up. Its List
	// reports the keys created or updated, and not deleted since, by the
	// inputs fed so far.
	Reconcilers []reconcilers.Reconciler
	// StatusSync runs the status store, in memory.
	StatusSync bool
	// Components are a user's own components. Each is made with the bus it
	// subscribes to, registered without dependencies, and sees every event
	// the replay relays. Their names must differ from the stages' and from
	// each other.
	Components []func(b *bus.Bus) lifecycle.Component
	// Until is the virtual offset, from the start of the replay, at which
	// it stops; inputs recorded later are not fed. Default: the offset of
	// the trace's last entry plus the header's Debounce interval (the
	// debouncer's default if none), so a change recorded at the very end
	// still gets its trailing trigger. A retry or resync due after Until is
	// not replayed: the recording ended before it too.
	Until time.Duration
	// Logger receives the stages' logs. Default: discarded.
	Logger *slog.Logger
	// SettleTimeout bounds, in real time, how long ReplayStepped waits for
	// the stages to become quiescent at one instant. Past it the replay
	// fails with an error naming what is busy (a bus with events unhandled,
	// a stage with work due) rather than hang. Default 1 minute, far beyond
	// what any step takes. Replay, under synctest, does not need it.
	SettleTimeout time.Duration
}

// DefaultSettleTimeout is Options.SettleTimeout's default.
const DefaultSettleTimeout = time.Minute

// Stage names, which are also the names of the stages' components.
const (
	stageDebouncer   = "debouncer"
	stageCoordinator = coordinator.Name
	stageStatusSync  = "status-store"
)

// owners maps each catalogue event type to the stage that emits it. The
// recorded events of a stage not run are fed in its place; the types the
// watchers and the leader election emit ("") are always fed.
var owners = map[string]string{
	events.TypeResourceChanged:         "",
	events.TypeIndexSynchronized:       "",
	events.TypeServiceStateChanged:     "",
	events.TypeBecameLeader:            "",
	events.TypeLostLeadership:          "",
	events.TypeReconciliationTriggered: stageDebouncer,
	events.TypeReconciliationStarted:   stageCoordinator,
	events.TypeResourceSynced:          stageCoordinator,
	events.TypeResourceFailed:          stageCoordinator,
	events.TypeStatusSynced:            stageStatusSync,
	events.TypeStatusSyncFailed:        stageStatusSync,
}

// Replay runs tr through the stages opts chooses and returns the events they
// emitted, under tr's header with Start set to the instant Replay was
// called. It must be called inside a testing/synctest bubble (see the
// package documentation for how it feeds inputs and why the result is
// deterministic); ReplayStepped is the same replay outside one. It returns
// an error if a stage cannot be built or started, or fails.
func Replay(tr *eventtrace.Trace, opts Options) (*eventtrace.Trace, error) {
	if !inBubble() {
		return nil, errors.New("replay: Replay must be called inside a testing/synctest bubble (synctest.Test)")
	}
	return replay(tr, opts, bubble{notify: make(chan struct{}, 1)})
}

// ReplayStepped is Replay outside testing/synctest, as musterd replay runs
// it: the stages read a fake clock that the replay steps itself, starting
// at the bubble's 2000-01-01 00:00:00 UTC, so that its output is byte for
// byte Replay's. Where Replay waits until every goroutine of the bubble is
// blocked, ReplayStepped waits until the stages are quiescent: every bus
// has handled everything published on it, and the debouncer, the
// coordinator and the status store report nothing due at the current time
// (their Quiescent methods). It then moves the clock to the next recorded
// input or to the next instant a stage acts on its own, whichever comes
// first. If the stages are not quiescent within Options.SettleTimeout of
// real time, it fails with an error that names what is busy.
//
// A user's component is known to be quiescent only through its bus
// subscriptions: one that works on goroutines of its own, or waits on
// time, must be replayed with Replay under synctest. Reconcilers given in
// opts must not wait on time either: the clock stands still while they run.
func ReplayStepped(tr *eventtrace.Trace, opts Options) (*eventtrace.Trace, error) {
	bound := opts.SettleTimeout
	if bound <= 0 {
		bound = DefaultSettleTimeout
	}
	return replay(tr, opts, newStepped(bubbleEpoch, bound))
}

// bubbleEpoch is where a synctest bubble's clock starts.
var bubbleEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func replay(tr *eventtrace.Trace, opts Options, seq sequencer) (*eventtrace.Trace, error) {
	if tr == nil {
		return nil, errors.New("replay: nil trace")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &run{seq: seq, start: seq.now(), log: opts.Logger, declared: newDeclaredKeys()}
	running := map[string]bool{stageDebouncer: opts.Debouncer, stageCoordinator: opts.Coordinator, stageStatusSync: opts.StatusSync}
	inputs := r.inputs(tr, running)

	reg := lifecycle.New(lifecycle.Options{Logger: opts.Logger})
	if err := r.build(reg, tr, opts); err != nil {
		r.closeBuses()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- reg.Run(ctx) }()
	if !seq.started(reg, ran) {
		cancel()
		err := <-ran
		r.closeBuses()
		return nil, fmt.Errorf("replay: the stages did not start: %w", errors.Join(err, unhealthy(reg)))
	}
	for _, s := range r.stages {
		s.bus.Start()
	}

	until := opts.Until
	if until <= 0 {
		until = defaultUntil(tr)
	}
	stuck := r.drive(inputs, until)

	cancel()
	err := <-ran
	r.closeBuses()
	if stuck != nil {
		return nil, fmt.Errorf("replay: %w", errors.Join(stuck, err))
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	h := tr.Header
	h.Start = r.start.Round(0).UTC()
	return &eventtrace.Trace{Header: h, Entries: r.out}, nil
}

// inBubble reports whether the caller runs inside a synctest bubble, where
// synctest.Wait does not panic.
func inBubble() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	synctest.Wait()
	return true
}

func unhealthy(reg *lifecycle.Registry) error {
	var errs []error
	for _, h := range reg.Health() {
		if h.State != lifecycle.StateRunning {
			errs = append(errs, fmt.Errorf("%s is %s: %v", h.Name, h.State, h.Err))
		}
	}
	return errors.Join(errs...)
}

func defaultUntil(tr *eventtrace.Trace) time.Duration {
	var last time.Duration
	if n := len(tr.Entries); n > 0 {
		last = tr.Entries[n-1].At
	}
	if d := time.Duration(tr.Header.Config.Debounce); d > 0 {
		return last + d
	}
	return last + debouncer.DefaultInterval
}

// run is one replay in progress.
type run struct {
	seq    sequencer
	start  time.Time
	log    *slog.Logger
	stages []*stage           // in relay order
	out    []eventtrace.Entry // what the stages emitted, in relay order
	ids    atomic.Uint64      // the coordinator's correlation IDs
	subs   []*bus.Subscription
	// declared holds the keys the inputs fed so far declare, for the
	// recorded outcomes' List.
	declared *declaredKeys
}

// stage is one stage, or one user component, on its own bus.
type stage struct {
	name string
	bus  *bus.Bus
	// relayed counts events the replay published on bus that its collector
	// has not seen yet. The replay publishes only while every goroutine
	// but its own is blocked, so on each bus a relayed event reaches the
	// collector before anything the stage emits in response.
	relayed atomic.Int64

	mu      sync.Mutex
	emitted []eventtrace.Entry // collected, not yet relayed
}

// newStage makes a bus and subscribes its collector, which keeps what the
// stage emits and skips what the replay relays.
func (r *run) newStage(name string) (*stage, error) {
	s := &stage{name: name, bus: bus.New(bus.Options{Logger: r.log})}
	sub, err := s.bus.Subscribe(bus.SubscriberOptions{
		Name:     "replay-collector",
		Delivery: bus.Unbounded(), // lossless, in publish order
		Handlers: []bus.Handler{bus.On(func(e events.Event) {
			if s.relayed.Load() > 0 {
				s.relayed.Add(-1)
				return
			}
			s.mu.Lock()
			s.emitted = append(s.emitted, eventtrace.Entry{At: r.seq.now().Sub(r.start), Event: e})
			s.mu.Unlock()
			r.seq.emitted()
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", name, err)
	}
	r.stages = append(r.stages, s)
	r.subs = append(r.subs, sub)
	r.seq.watchBus(name, s.bus)
	return s, nil
}

// build makes the chosen stages, each on its own bus, and registers them.
// Stages are relayed to in the order they are made: the pipeline's
// (debouncer, coordinator, status store), then the user's components.
// They need no dependencies: nothing is published before all have
// subscribed.
func (r *run) build(reg *lifecycle.Registry, tr *eventtrace.Trace, opts Options) error {
	add := func(name string, newComponent func(b *bus.Bus) (lifecycle.Component, error), regOpts ...lifecycle.Option) error {
		s, err := r.newStage(name)
		if err != nil {
			return err
		}
		c, err := newComponent(s.bus)
		if err != nil {
			return fmt.Errorf("replay: %s: %w", name, err)
		}
		if err := reg.Register(c, regOpts...); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		return nil
	}
	cfg := tr.Header.Config
	if opts.Debouncer {
		if err := add(stageDebouncer, func(b *bus.Bus) (lifecycle.Component, error) {
			d, err := debouncer.New(b, debouncer.Options{Interval: time.Duration(cfg.Debounce), Logger: r.log, Clock: r.seq.clock()})
			if err == nil {
				r.seq.watch(stageDebouncer, d)
			}
			return d, err
		}, lifecycle.Critical()); err != nil {
			return err
		}
	}
	if opts.Coordinator {
		recs := opts.Reconcilers
		if len(recs) == 0 {
			recs = recordedOutcomes(tr, r.declared, r.seq.clock())
		}
		if err := add(stageCoordinator, func(b *bus.Bus) (lifecycle.Component, error) {
			rr, err := reconcilers.NewRegistry(recs...)
			if err != nil {
				return nil, err
			}
			jitter := rand.New(rand.NewPCG(1, 2))
			c, err := coordinator.New(b, rr, coordinator.Options{
				Workers:          1,
				ReconcileTimeout: time.Duration(cfg.ReconcileTimeout),
				BackoffBase:      time.Duration(cfg.BackoffBase),
				BackoffMax:       time.Duration(cfg.BackoffMax),
				Jitter:           cfg.Jitter,
				MaxRetries:       cfg.MaxRetries,
				ResyncPeriod:     time.Duration(cfg.Resync),
				Logger:           r.log,
				Rand:             jitter.Float64, // called by the one worker only
				NewCorrelationID: func() string { return fmt.Sprintf("replay-%06d", r.ids.Add(1)) },
				Clock:            r.seq.clock(),
			})
			if err == nil {
				r.seq.watch(stageCoordinator, c)
			}
			return c, err
		}, lifecycle.Critical()); err != nil {
			return err
		}
	}
	if opts.StatusSync {
		if err := add(stageStatusSync, func(b *bus.Bus) (lifecycle.Component, error) {
			st := statusync.NewStore(b, statusync.StoreOptions{Logger: r.log, Clock: r.seq.clock()})
			r.seq.watch(stageStatusSync, st)
			return st, nil
		}, lifecycle.Critical()); err != nil {
			return err
		}
	}
	for i, newComponent := range opts.Components {
		if err := add(fmt.Sprintf("component %d", i), func(b *bus.Bus) (lifecycle.Component, error) {
			if c := newComponent(b); c != nil {
				return c, nil
			}
			return nil, errors.New("its constructor returned nil")
		}); err != nil {
			return err
		}
	}
	return nil
}

// inputs returns the entries to feed, given the stages that run, with their
// times moved to the replay's clock.
func (r *run) inputs(tr *eventtrace.Trace, running map[string]bool) []eventtrace.Entry {
	var in []eventtrace.Entry
	for _, e := range tr.Entries {
		owner, known := owners[e.Event.EventType()]
		if !known || (owner != "" && running[owner]) {
			continue
		}
		in = append(in, eventtrace.Entry{At: e.At, Event: rebase(e.Event, r.start.Add(e.At).Round(0).UTC())})
	}
	return in
}

// rebase returns e stamped at t. A failure's NextRetry keeps its distance.
func rebase(e events.Event, t time.Time) events.Event {
	switch v := e.(type) {
	case events.ResourceChanged:
		v.Time = t
		return v
	case events.IndexSynchronized:
		v.Time = t
		return v
	case events.ServiceStateChanged:
		v.Time = t
		return v
	case events.BecameLeader:
		v.Time = t
		return v
	case events.LostLeadership:
		v.Time = t
		return v
	case events.ReconciliationTriggered:
		v.Time = t
		return v
	case events.ReconciliationStarted:
		v.Time = t
		return v
	case events.ResourceSynced:
		v.Time = t
		return v
	case events.ResourceFailed:
		if v.WillRetry() {
			v.NextRetry = t.Add(v.NextRetry.Sub(v.Time))
		}
		v.Time = t
		return v
	case events.StatusSynced:
		v.Time = t
		return v
	case events.StatusSyncFailed:
		v.Time = t
		return v
	}
	return e
}

// drive feeds inputs at their offsets and relays what the stages emit,
// until the offset until, or until the stages fail to settle.
func (r *run) drive(inputs []eventtrace.Entry, until time.Duration) error {
	next := 0
	for {
		if err := r.seq.settle(); err != nil {
			return err
		}
		if err := r.relayEmitted(); err != nil {
			return err
		}
		now := r.seq.now().Sub(r.start)
		if next < len(inputs) && inputs[next].At <= now && inputs[next].At <= until {
			// Inputs due now go after whatever the stages' own timers did
			// at this instant: a fixed order, where the scheduler would
			// pick one.
			r.declared.observe(inputs[next].Event)
			if err := r.relay(inputs[next].Event); err != nil {
				return err
			}
			next++
			continue
		}
		if now >= until {
			return nil
		}
		wake := until
		if next < len(inputs) {
			wake = min(wake, inputs[next].At)
		}
		r.seq.advance(r.start.Add(wake))
	}
}

// relayEmitted relays what the stages emitted, stage by stage in relay
// order, until they emit nothing more.
func (r *run) relayEmitted() error {
	for {
		var batch []eventtrace.Entry
		for _, s := range r.stages {
			s.mu.Lock()
			batch = append(batch, s.emitted...)
			s.emitted = s.emitted[:0]
			s.mu.Unlock()
		}
		if len(batch) == 0 {
			return nil
		}
		for _, e := range batch {
			r.out = append(r.out, e)
			if err := r.relay(e.Event); err != nil {
				return err
			}
		}
	}
}

// relay publishes e on every stage's bus and waits until every stage has
// handled it.
func (r *run) relay(e events.Event) error {
	for _, s := range r.stages {
		s.relayed.Add(1)
		s.bus.Publish(e)
	}
	return r.seq.settle()
}

// closeBuses closes every bus and waits for the collectors to end.
func (r *run) closeBuses() {
	for _, s := range r.stages {
		s.bus.Close()
	}
	for _, sub := range r.subs {
		<-sub.Done()
	}
}
