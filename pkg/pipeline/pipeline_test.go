package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/statusync"
)

const (
	kind     = "Workflow"
	interval = 500 * time.Millisecond
)

// scripted is the test's reconciler. Its behaviour per call is a function
// of the call; it records every call and fails the test if one key is ever
// reconciled by two workers at once.
type scripted struct {
	t        *testing.T
	behave   func(call) reconcilers.Result
	mu       sync.Mutex
	calls    []call
	inFlight map[events.Key]*atomic.Int32
	keys     []events.Key // what List reports
}

type call struct {
	Key     events.Key
	Attempt int
	At      time.Time
	Ctx     context.Context
}

func newScripted(t *testing.T, behave func(call) reconcilers.Result) *scripted {
	return &scripted{t: t, behave: behave, inFlight: map[events.Key]*atomic.Int32{}}
}

func (s *scripted) Kind() string { return kind }

func (s *scripted) List(context.Context) ([]events.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]events.Key(nil), s.keys...), nil
}

func (s *scripted) Reconcile(ctx context.Context, req reconcilers.Request) reconcilers.Result {
	c := call{Key: req.Key, Attempt: req.Attempt, At: time.Now(), Ctx: ctx}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	n := s.inFlight[req.Key]
	if n == nil {
		n = &atomic.Int32{}
		s.inFlight[req.Key] = n
	}
	s.mu.Unlock()
	if n.Add(1) != 1 {
		s.t.Errorf("%s is reconciled by two workers at once", req.Key)
	}
	defer n.Add(-1)
	return s.behave(c)
}

func (s *scripted) callsOf(key events.Key) []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []call
	for _, c := range s.calls {
		if c.Key == key {
			out = append(out, c)
		}
	}
	return out
}

// harness runs a whole pipeline in a synctest bubble and records every
// event on its bus.
type harness struct {
	t      *testing.T
	p      *pipeline.Pipeline
	rec    *scripted
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	seen   []events.Event
	t0     time.Time
}

func start(t *testing.T, rec *scripted) *harness {
	return startWith(t, rec, pipeline.Options{})
}

// startWith starts a pipeline with opts, in which it sets the logger, the
// reconciler, the debouncer's interval and exact backoff.
func startWith(t *testing.T, rec *scripted, opts pipeline.Options) *harness {
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Reconcilers = []reconcilers.Reconciler{rec}
	opts.Debouncer.Interval = interval
	opts.Coordinator.Jitter = -1
	p, err := pipeline.New(opts)
	require.NoError(t, err)
	h := &harness{t: t, p: p, rec: rec, done: make(chan error, 1), t0: time.Now()}
	_, err = bus.Subscribe(p.Bus, "test-recorder", bus.Lossy(1<<20), func(e events.Event) {
		h.mu.Lock()
		h.seen = append(h.seen, e)
		h.mu.Unlock()
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- p.Run(ctx) }()
	synctest.Wait()
	require.True(t, p.Components.Ready(), "the pipeline did not start")

	// The watcher's initial listing is empty: from now on changes fire at
	// once.
	bus.Publish(p.Bus, events.IndexSynchronized{Meta: events.NewMeta(""), Source: events.SourceFilesystem})
	synctest.Wait()
	return h
}

func (h *harness) stop() {
	h.cancel()
	require.NoError(h.t, <-h.done)
}

func (h *harness) change(name string) (events.Key, string) {
	key := events.NewKey(kind, "", name)
	meta := events.NewMeta("")
	bus.Publish(h.p.Bus, events.ResourceChanged{Meta: meta, Key: key, Operation: events.OperationUpdate, Source: events.SourceFilesystem})
	return key, meta.CorrelationID
}

func (h *harness) status(key events.Key) statusync.Status {
	st, ok := h.p.Store.Get(key)
	require.True(h.t, ok, "no status for %s", key)
	return st
}

// eventsOf returns the names of the events of one chain, in order.
func (h *harness) chain(correlationID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.seen {
		if e.Metadata().CorrelationID == correlationID {
			out = append(out, e.EventType())
		}
	}
	return out
}

func offsets(t0 time.Time, calls []call) []time.Duration {
	out := make([]time.Duration, len(calls))
	for i, c := range calls {
		out[i] = c.At.Sub(t0)
	}
	return out
}

func TestChangeReachesSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, newScripted(t, func(call) reconcilers.Result { return reconcilers.Result{} }))
		defer h.stop()

		key, corr := h.change("deploy")
		synctest.Wait()

		calls := h.rec.callsOf(key)
		require.Len(t, calls, 1)
		assert.Equal(t, h.t0, calls[0].At, "the first change is reconciled with zero added delay")
		st := h.status(key)
		assert.Equal(t, statusync.StateSynced, st.State)
		assert.Equal(t, corr, st.CorrelationID)
		assert.Empty(t, st.LastError)

		// Every event of the chain carries the change's correlation ID. The
		// status store writes each state it sees (Pending, then Synced), so
		// StatusSynced appears between the others and at the end.
		chain := h.chain(corr)
		var core []string
		for _, name := range chain {
			if name != events.TypeStatusSynced {
				core = append(core, name)
			}
		}
		assert.Equal(t, []string{"ResourceChanged", "ReconciliationTriggered", "ReconciliationStarted", "ResourceSynced"}, core)
		assert.Equal(t, events.TypeStatusSynced, chain[len(chain)-1])
		require.NoError(t, testutil.GatherAndCompare(h.p.Registry, strings.NewReader(`
# HELP musterd_reconcile_total Total number of reconciliations per kind and result (success, error, requeue_after).
# TYPE musterd_reconcile_total counter
musterd_reconcile_total{kind="Workflow",result="error"} 0
musterd_reconcile_total{kind="Workflow",result="requeue_after"} 0
musterd_reconcile_total{kind="Workflow",result="success"} 1
`), "musterd_reconcile_total"))
	})
}

func TestFailingReconcilerGoesToErrorRetriesWithGrowingDelaysThenFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, newScripted(t, func(call) reconcilers.Result {
			return reconcilers.Result{Err: errors.New("connect https://admin:hunter2@registry.local failed")}
		}))
		defer h.stop()

		key, _ := h.change("flaky")
		synctest.Wait()
		st := h.status(key)
		assert.Equal(t, statusync.StateError, st.State)
		assert.Equal(t, time.Second, st.NextRetry.Sub(h.t0))
		assert.Equal(t, 0, st.RetryCount)
		assert.NotContains(t, st.LastError, "hunter2", "the status leaks a password")

		time.Sleep(time.Hour)
		synctest.Wait()
		calls := h.rec.callsOf(key)
		assert.Equal(t, []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 31 * time.Second},
			offsets(h.t0, calls), "retries follow 1s, 2s, 4s, 8s, 16s and stop after MaxRetries")
		for i, c := range calls {
			assert.Equal(t, i+1, c.Attempt)
		}
		st = h.status(key)
		assert.Equal(t, statusync.StateFailed, st.State)
		assert.Equal(t, 5, st.RetryCount)
		assert.True(t, st.NextRetry.IsZero())
		assert.Contains(t, st.LastError, "failed")

		// Failed holds until the next change, which starts afresh.
		h.change("flaky")
		synctest.Wait()
		calls = h.rec.callsOf(key)
		require.Len(t, calls, 7)
		assert.Equal(t, 1, calls[6].Attempt)
	})
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, newScripted(t, func(call) reconcilers.Result {
			return reconcilers.Result{Err: reconcilers.Permanent(errors.New("spec.steps: at least one step is required"))}
		}))
		defer h.stop()

		key, _ := h.change("invalid")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, h.rec.callsOf(key), 1)
		st := h.status(key)
		assert.Equal(t, statusync.StateError, st.State, "an invalid definition is an Error awaiting a fix")
		assert.True(t, st.NextRetry.IsZero(), "no retry is scheduled")
		assert.Equal(t, "spec.steps: at least one step is required", st.LastError)
	})
}

func TestChangeDuringReconcileIsReconciledAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		h := start(t, newScripted(t, func(call) reconcilers.Result {
			if n.Add(1) == 1 {
				time.Sleep(2 * time.Second) // the first reconcile is slow
			}
			return reconcilers.Result{}
		}))
		defer h.stop()

		key, _ := h.change("busy")
		time.Sleep(100 * time.Millisecond) // the first reconcile runs until 2s
		_, second := h.change("busy")
		synctest.Wait()
		assert.Equal(t, statusync.StatePending, h.status(key).State, "a change seen during a reconcile makes the key pending again")

		time.Sleep(time.Hour)
		synctest.Wait()
		// The second change waits out the refractory period (500ms) and then
		// for the running reconcile (until 2s); the key is reconciled again
		// right after, once.
		assert.Equal(t, []time.Duration{0, 2 * time.Second}, offsets(h.t0, h.rec.callsOf(key)))
		st := h.status(key)
		assert.Equal(t, statusync.StateSynced, st.State)
		assert.Equal(t, second, st.CorrelationID, "the status shows the newest change's chain")
	})
}

func TestShutdownDuringAReconcileLeavesNoFailedStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, newScripted(t, func(c call) reconcilers.Result {
			<-c.Ctx.Done() // until the pipeline stops
			return reconcilers.Result{Err: c.Ctx.Err()}
		}))
		key, corr := h.change("long")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, statusync.StateReconciling, h.status(key).State)

		h.stop()
		st := h.status(key)
		assert.Equal(t, statusync.StateReconciling, st.State, "a clean shutdown is not a failure of the resource")
		assert.Empty(t, st.LastError)
		assert.NotContains(t, h.chain(corr), events.TypeResourceFailed)
		require.NoError(t, testutil.GatherAndCompare(h.p.Registry, strings.NewReader(`
# HELP musterd_reconcile_total Total number of reconciliations per kind and result (success, error, requeue_after).
# TYPE musterd_reconcile_total counter
`), "musterd_reconcile_total"), "an interrupted reconcile did not finish: it is not counted")
	})
}

func TestReconcileMetricsAreExactUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A metrics mailbox of one event drops most of a burst; the
		// reconcile metrics must not.
		h := startWith(t, newScripted(t, func(c call) reconcilers.Result {
			if c.Key.Name == "bad" {
				return reconcilers.Result{Err: reconcilers.Permanent(errors.New("invalid"))}
			}
			return reconcilers.Result{}
		}), pipeline.Options{MetricsCapacity: 1})
		defer h.stop()

		const keys = 200
		for i := range keys {
			h.change(fmt.Sprint("w", i))
		}
		h.change("bad")
		synctest.Wait()

		require.NoError(t, testutil.GatherAndCompare(h.p.Registry, strings.NewReader(fmt.Sprintf(`
# HELP musterd_reconcile_total Total number of reconciliations per kind and result (success, error, requeue_after).
# TYPE musterd_reconcile_total counter
musterd_reconcile_total{kind="Workflow",result="error"} 1
musterd_reconcile_total{kind="Workflow",result="requeue_after"} 0
musterd_reconcile_total{kind="Workflow",result="success"} %d
# HELP musterd_reconcile_errors_total Total number of reconciliation errors per kind.
# TYPE musterd_reconcile_errors_total counter
musterd_reconcile_errors_total{kind="Workflow"} 1
`, keys)), "musterd_reconcile_total", "musterd_reconcile_errors_total"))
		families, err := h.p.Registry.Gather()
		require.NoError(t, err)
		var timed uint64
		for _, f := range families {
			if f.GetName() == "musterd_reconcile_time_seconds" {
				timed = f.GetMetric()[0].GetHistogram().GetSampleCount()
			}
		}
		assert.EqualValues(t, keys+1, timed, "every reconcile is timed")
	})
}

func TestNoKeyIsEverReconciledConcurrentlyUnderChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		h := start(t, newScripted(t, func(c call) reconcilers.Result {
			// Reconciles of varied length, some failing, so that changes
			// land during reconciles, backoffs and refractory periods.
			i := n.Add(1)
			time.Sleep(time.Duration(i%7) * 150 * time.Millisecond)
			if i%5 == 0 {
				return reconcilers.Result{Err: fmt.Errorf("transient %d", i)}
			}
			return reconcilers.Result{}
		}))
		defer h.stop()

		const keys = 20
		last := map[events.Key]time.Time{}
		for step := range 400 {
			key, _ := h.change(fmt.Sprint("w", (step*7)%keys))
			last[key] = time.Now()
			time.Sleep(time.Duration(step%9) * 40 * time.Millisecond)
		}
		time.Sleep(time.Hour)
		synctest.Wait()

		for key, changedAt := range last {
			calls := h.rec.callsOf(key)
			require.NotEmpty(t, calls, key.String())
			assert.False(t, calls[len(calls)-1].At.Before(changedAt), "%s: its last change was never reconciled", key)
			assert.Equal(t, statusync.StateSynced, h.status(key).State, key.String())
		}
	})
}

func TestAddedComponentsStartAfterTheCoreAndSeeEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pipeline.New(pipeline.Options{Logger: slog.New(slog.DiscardHandler),
			Reconcilers: []reconcilers.Reconciler{newScripted(t, func(call) reconcilers.Result { return reconcilers.Result{} })}})
		require.NoError(t, err)
		w := &eagerWatcher{bus: p.Bus, key: events.NewKey(kind, "", "early")}
		require.NoError(t, p.Add(w))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()

		// The watcher published during its own Start; the barrier held the
		// events until every stage had subscribed.
		st, ok := p.Store.Get(w.key)
		require.True(t, ok)
		assert.Equal(t, statusync.StateSynced, st.State)
		cancel()
		require.NoError(t, <-done)
	})
}

// eagerWatcher publishes its listing as soon as it starts, as a real
// watcher does.
type eagerWatcher struct {
	bus *bus.Bus
	key events.Key
}

func (w *eagerWatcher) Name() string { return "eager-watcher" }
func (w *eagerWatcher) Start(ctx context.Context) error {
	bus.Publish(w.bus, events.ResourceChanged{Meta: events.NewMeta(""), Key: w.key, Operation: events.OperationCreate, Source: events.SourceFilesystem})
	bus.Publish(w.bus, events.IndexSynchronized{Meta: events.NewMeta(""), Source: events.SourceFilesystem})
	<-ctx.Done()
	return nil
}

func TestStopTimeoutBoundsShutdownEvenWithAStuckSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pipeline.New(pipeline.Options{Logger: slog.New(slog.DiscardHandler),
			Lifecycle: lifecycle.Options{StopTimeout: 3 * time.Second}})
		require.NoError(t, err)
		release := make(chan struct{})
		stuck := &stuckComponent{bus: p.Bus, release: release}
		require.NoError(t, p.Add(stuck))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		bus.Publish(p.Bus, events.BecameLeader{}) // its handler blocks
		synctest.Wait()

		cancel()
		stopAt := time.Now()
		err = <-done
		assert.ErrorContains(t, err, `"stuck"`)
		assert.Equal(t, 3*time.Second, time.Since(stopAt), "Run returns when StopTimeout runs out")
		close(release) // let the bubble's goroutines end
	})
}

// stuckComponent ignores cancellation and blocks in its handler.
type stuckComponent struct {
	bus     *bus.Bus
	release chan struct{}
}

func (s *stuckComponent) Name() string { return "stuck" }
func (s *stuckComponent) Start(context.Context) error {
	if _, err := bus.Subscribe(s.bus, "stuck", bus.Lossy(1), func(events.BecameLeader) { <-s.release }); err != nil {
		return err
	}
	<-s.release
	return nil
}

func TestFoundationsStartFirstAndStopAfterEveryStage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{Logger: slog.New(slog.DiscardHandler)})
		var p *pipeline.Pipeline
		var stillRunning []string
		foundation := &probe{name: "foundation", onStop: func() {
			for _, h := range p.Components.Health() {
				if h.Name != "foundation" && h.State != lifecycle.StateStopped {
					stillRunning = append(stillRunning, h.Name)
				}
			}
		}}
		var err error
		p, err = pipeline.New(pipeline.Options{Logger: slog.New(slog.DiscardHandler), Bus: b, Foundations: []lifecycle.Component{foundation}})
		require.NoError(t, err)
		require.Same(t, b, p.Bus)
		require.NoError(t, p.Add(&probe{name: "added"}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		cancel()
		require.NoError(t, <-done)
		assert.True(t, foundation.stopped)
		assert.Empty(t, stillRunning, "a foundation stops after every stage and every added component")
	})
}

// probe is a component that records its stop.
type probe struct {
	name    string
	onStop  func()
	stopped bool
}

func (p *probe) Name() string { return p.name }
func (p *probe) Start(ctx context.Context) error {
	<-ctx.Done()
	if p.onStop != nil {
		p.onStop()
	}
	p.stopped = true
	return nil
}

// Under leader election a follower keeps its index, debouncer and statuses
// warm and reconciles nothing; once elected, the pass its elector asks for
// reconciles every key once.
func TestAFollowerReconcilesNothingUntilElectedThenEverythingOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newScripted(t, func(call) reconcilers.Result { return reconcilers.Result{} })
		rec.keys = []events.Key{events.NewKey(kind, "", "a"), events.NewKey(kind, "", "b")}
		elected := make(chan struct{})
		h := startWith(t, rec, pipeline.Options{Lifecycle: lifecycle.Options{Elected: elected}})
		defer h.stop()

		key, _ := h.change("a")
		time.Sleep(10 * interval)
		synctest.Wait()
		assert.Empty(t, rec.callsOf(key), "a follower reconciles nothing")
		assert.Equal(t, statusync.StatePending, h.status(key).State, "but its status store follows the changes")

		h.p.Coordinator.Resync() // what the elector's OnElected does
		close(elected)
		synctest.Wait()
		for _, k := range rec.keys {
			assert.Len(t, rec.callsOf(k), 1, "every key, once: %s", k)
		}
		assert.Equal(t, statusync.StateSynced, h.status(key).State)
	})
}
