package coordinator_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

var discard = slog.New(slog.DiscardHandler)

// call is one Reconcile as the fake saw it, At measured from the bubble's
// start.
type call struct {
	At  time.Duration
	Req reconcilers.Request
}

// fake is a reconciler whose behaviour a test sets before starting. It
// records every call and every List with its virtual time, and catches a
// key reconciled twice at once with an atomic in-flight counter per key.
type fake struct {
	kind      string
	start     time.Time
	reconcile func(ctx context.Context, req reconcilers.Request) reconcilers.Result
	list      func(ctx context.Context) ([]events.Key, error)

	mu         sync.Mutex
	calls      []call
	lists      []time.Duration
	inFlight   map[events.Key]*atomic.Int32
	maxPerKey  int32
	running    int
	maxRunning int
}

// newFake must be called inside the bubble, at its start.
func newFake(kind string) *fake {
	return &fake{kind: kind, start: time.Now(), inFlight: map[events.Key]*atomic.Int32{}}
}

func (f *fake) Kind() string { return f.kind }

func (f *fake) Reconcile(ctx context.Context, req reconcilers.Request) reconcilers.Result {
	f.mu.Lock()
	counter := f.inFlight[req.Key]
	if counter == nil {
		counter = new(atomic.Int32)
		f.inFlight[req.Key] = counter
	}
	f.calls = append(f.calls, call{At: time.Since(f.start), Req: req})
	f.running++
	f.maxRunning = max(f.maxRunning, f.running)
	f.mu.Unlock()

	n := counter.Add(1)
	defer counter.Add(-1)
	f.mu.Lock()
	f.maxPerKey = max(f.maxPerKey, n)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	if f.reconcile == nil {
		return reconcilers.Result{}
	}
	return f.reconcile(ctx, req)
}

func (f *fake) List(ctx context.Context) ([]events.Key, error) {
	f.mu.Lock()
	f.lists = append(f.lists, time.Since(f.start))
	f.mu.Unlock()
	if f.list == nil {
		return nil, nil
	}
	return f.list(ctx)
}

func (f *fake) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// SortedCalls orders calls by time, then key, for calls whose order
// within one instant is up to the scheduler.
func (f *fake) SortedCalls() []call {
	calls := f.Calls()
	slices.SortStableFunc(calls, func(a, b call) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Req.Key.String(), b.Req.Key.String()))
	})
	return calls
}

func (f *fake) Lists() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lists)
}

// harness runs a coordinator on a real bus inside a synctest bubble and
// records everything it publishes.
type harness struct {
	t     *testing.T
	start time.Time
	bus   *bus.Bus
	c     *coordinator.Coordinator

	mu        sync.Mutex
	published []events.Event

	cancel context.CancelFunc
	done   chan error
}

// newHarness builds everything but does not start the coordinator.
func newHarness(t *testing.T, opts coordinator.Options, recs ...reconcilers.Reconciler) *harness {
	t.Helper()
	h := &harness{t: t, start: time.Now(), bus: bus.New(bus.Options{Logger: discard})}
	reg, err := reconcilers.NewRegistry(recs...)
	require.NoError(t, err)
	if opts.Logger == nil {
		opts.Logger = discard
	}
	h.c, err = coordinator.New(h.bus, reg, opts)
	require.NoError(t, err)
	_, err = h.bus.Subscribe(bus.SubscriberOptions{
		Name:     "recorder",
		Delivery: bus.Lossy(1 << 16),
		Handlers: []bus.Handler{
			bus.On(func(e events.ReconciliationStarted) { h.record(e) }),
			bus.On(func(e events.ResourceSynced) { h.record(e) }),
			bus.On(func(e events.ResourceFailed) { h.record(e) }),
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		h.stop()
		h.bus.Close()
		for _, hs := range h.bus.Stats().Handlers {
			require.Zero(t, hs.Dropped, "the recorder dropped events")
		}
	})
	return h
}

// run builds and starts a coordinator.
func run(t *testing.T, opts coordinator.Options, recs ...reconcilers.Reconciler) *harness {
	t.Helper()
	h := newHarness(t, opts, recs...)
	h.startCoordinator()
	return h
}

func (h *harness) startCoordinator() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.c.Start(ctx) }()
	<-h.c.SubscriptionReady()
	h.bus.Start()
}

// stop cancels the coordinator and waits for Start to return nil.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	require.NoError(h.t, <-h.done)
	h.cancel = nil
}

func (h *harness) record(e events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.published = append(h.published, e)
}

// at is the event time of virtual instant d after the bubble's start.
func (h *harness) at(d time.Duration) time.Time { return h.start.Add(d).Round(0).UTC() }

// trigger publishes one ReconciliationTriggered naming keys under corr,
// and lets it be handled.
func (h *harness) trigger(reason events.Reason, corr string, keys ...events.Key) {
	tks := make([]events.TriggeredKey, len(keys))
	for i, k := range keys {
		tks[i] = events.TriggeredKey{Key: k, CorrelationID: corr}
	}
	bus.Publish(h.bus, events.ReconciliationTriggered{Meta: events.NewMeta(corr), Reason: reason, Keys: events.NewTriggeredKeys(tks...)})
	synctest.Wait()
}

func (h *harness) events() []events.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.published)
}

func eventsOf[T events.Event](h *harness) []T {
	var out []T
	for _, e := range h.events() {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// try is a call reduced to when it ran and which attempt it was.
type try struct {
	At      time.Duration
	Attempt int
}

func tries(calls []call) []try {
	out := make([]try, len(calls))
	for i, c := range calls {
		out[i] = try{c.At, c.Req.Attempt}
	}
	return out
}

// debugLogger logs everything, as text, to w.
func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
