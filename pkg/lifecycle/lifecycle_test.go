package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

var quiet = slog.New(slog.DiscardHandler)

// fake is a component; run defaults to waiting for ctx.
type fake struct {
	name string
	run  func(ctx context.Context) error
}

func (f *fake) Name() string { return f.name }

func (f *fake) Start(ctx context.Context) error {
	if f.run == nil {
		<-ctx.Done()
		return nil
	}
	return f.run(ctx)
}

// subscriber is a fake that signals SubscriptionReady by closing ready.
type subscriber struct {
	fake
	ready chan struct{}
}

func newSubscriber(name string) *subscriber {
	return &subscriber{fake: fake{name: name}, ready: make(chan struct{})}
}

func (s *subscriber) SubscriptionReady() <-chan struct{} { return s.ready }

// busyFake reports itself busy since a settable time.
type busyFake struct {
	fake
	since atomic.Int64 // unix nanoseconds, 0 when idle
}

func (b *busyFake) setBusy(since time.Time) { b.since.Store(since.UnixNano()) }
func (b *busyFake) setIdle()                { b.since.Store(0) }

func (b *busyFake) BusySince() (time.Time, bool) {
	ns := b.since.Load()
	return time.Unix(0, ns), ns != 0
}

// checkedFake fails its health check while err is set.
type checkedFake struct {
	fake
	err atomic.Pointer[error]
}

func (c *checkedFake) HealthCheck() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// timeline records when things happen, as offsets from its creation.
type timeline struct {
	t0  time.Time
	mu  sync.Mutex
	at  map[string]time.Duration
	seq []string
}

func newTimeline() *timeline { return &timeline{t0: time.Now(), at: map[string]time.Duration{}} }

func (tl *timeline) mark(what string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.at[what] = time.Since(tl.t0)
	tl.seq = append(tl.seq, what)
}

func (tl *timeline) times() map[string]time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := make(map[string]time.Duration, len(tl.at))
	for k, v := range tl.at {
		out[k] = v
	}
	return out
}

func (tl *timeline) sequence() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.seq)
}

// startedThenWait marks "<name> started" and waits for ctx.
func startedThenWait(tl *timeline, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		tl.mark(name + " started")
		<-ctx.Done()
		return nil
	}
}

type runResult struct {
	err error
	at  time.Time
}

// runInBackground runs r until cancel is called; the result says when Run
// returned.
func runInBackground(r *Registry) (cancel context.CancelFunc, result <-chan runResult) {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan runResult, 1)
	go func() {
		err := r.Run(ctx)
		out <- runResult{err: err, at: time.Now()}
	}()
	return cancel, out
}

func healthOf(t *testing.T, r *Registry, name string) ComponentHealth {
	t.Helper()
	for _, h := range r.Health() {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no health for %q", name)
	return ComponentHealth{}
}

func states(r *Registry) map[string]State {
	out := map[string]State{}
	for _, h := range r.Health() {
		out[h.Name] = h.State
	}
	return out
}

func TestStartsInDependencyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl := newTimeline()
		a := newSubscriber("a")
		a.run = func(ctx context.Context) error {
			tl.mark("a started")
			time.Sleep(3 * time.Second) // subscribes late
			tl.mark("a subscribed")
			close(a.ready)
			<-ctx.Done()
			return nil
		}
		r := New(Options{Logger: quiet})
		// b is registered before its dependency: registration order does not
		// matter.
		require.NoError(t, r.Register(&fake{name: "b", run: startedThenWait(tl, "b")}, DependsOn("a")))
		require.NoError(t, r.Register(a))
		require.NoError(t, r.Register(&fake{name: "c", run: startedThenWait(tl, "c")}))

		cancel, result := runInBackground(r)
		synctest.Wait()
		// c is independent and starts at once, alongside a.
		assert.Equal(t, map[string]time.Duration{"a started": 0, "c started": 0}, tl.times())
		assert.Equal(t, map[string]State{"a": StateStarting, "b": StatePending, "c": StateRunning}, states(r))
		assert.False(t, r.Ready())

		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.NotContains(t, tl.times(), "b started")

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, map[string]time.Duration{
			"a started": 0, "c started": 0, "a subscribed": 3 * time.Second, "b started": 3 * time.Second,
		}, tl.times())
		seq := tl.sequence()
		assert.Less(t, slices.Index(seq, "a subscribed"), slices.Index(seq, "b started"), seq)
		assert.Equal(t, map[string]State{"a": StateRunning, "b": StateRunning, "c": StateRunning}, states(r))
		assert.True(t, r.Ready())

		cancel()
		require.NoError(t, (<-result).err)
	})
}

func TestRejectsBadGraphsBeforeStarting(t *testing.T) {
	type node struct {
		name       string
		deps       []string
		leaderOnly bool
	}
	cases := []struct {
		name  string
		nodes []node
		want  string
	}{
		{
			name:  "unknown dependency",
			nodes: []node{{name: "a"}, {name: "b", deps: []string{"a", "ghost"}}},
			want:  `lifecycle: "b" depends on unknown component "ghost"`,
		},
		{
			name:  "two-cycle",
			nodes: []node{{name: "a", deps: []string{"b"}}, {name: "b", deps: []string{"a"}}},
			want:  "lifecycle: cycle: a → b → a",
		},
		{
			name: "cycle reached through a component outside it",
			nodes: []node{
				{name: "x", deps: []string{"a"}},
				{name: "a", deps: []string{"b"}},
				{name: "b", deps: []string{"c"}},
				{name: "c", deps: []string{"a"}},
			},
			want: "lifecycle: cycle: a → b → c → a",
		},
		{
			name:  "self-dependency",
			nodes: []node{{name: "a", deps: []string{"a"}}},
			want:  "lifecycle: cycle: a → a",
		},
		{
			name:  "follower depending on a leader-only component",
			nodes: []node{{name: "writer", leaderOnly: true}, {name: "reader", deps: []string{"writer"}}},
			want:  `lifecycle: "reader" depends on leader-only "writer" but is not leader-only: it would wait for an election on every follower`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var started atomic.Int32
			b := bus.New(bus.Options{Logger: quiet})
			r := New(Options{Bus: b, Logger: quiet})
			for _, n := range tc.nodes {
				opts := []Option{DependsOn(n.deps...)}
				if n.leaderOnly {
					opts = append(opts, LeaderOnly())
				}
				require.NoError(t, r.Register(&fake{name: n.name, run: func(context.Context) error {
					started.Add(1)
					return nil
				}}, opts...))
			}
			require.EqualError(t, r.Run(context.Background()), tc.want)
			assert.Zero(t, started.Load(), "a component started")
			assert.False(t, b.Started(), "barrier released")
			for _, h := range r.Health() {
				assert.Equal(t, StatePending, h.State, h.Name)
			}
		})
	}
}

func TestBarrierReleasedOnlyAfterEveryComponentSubscribed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()

		// The watcher publishes during its own Start, before the late
		// subscriber has subscribed.
		watcher := &fake{name: "watcher", run: func(ctx context.Context) error {
			bus.Publish(b, events.IndexSynchronized{Meta: events.NewMeta(""), Source: events.SourceFilesystem})
			<-ctx.Done()
			return nil
		}}
		type receipt struct {
			source events.Source
			at     time.Duration
		}
		var mu sync.Mutex
		var received []receipt
		late := newSubscriber("late")
		late.run = func(ctx context.Context) error {
			time.Sleep(5 * time.Second)
			sub, err := bus.Subscribe(b, "late", bus.Lossy(8), func(e events.IndexSynchronized) {
				mu.Lock()
				defer mu.Unlock()
				received = append(received, receipt{e.Source, time.Since(t0)})
			})
			if err != nil {
				return err
			}
			close(late.ready)
			<-ctx.Done()
			sub.Unsubscribe()
			return nil
		}
		r := New(Options{Bus: b, Logger: quiet})
		require.NoError(t, r.Register(watcher))
		require.NoError(t, r.Register(late))
		cancel, result := runInBackground(r)

		time.Sleep(5*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.False(t, b.Started(), "barrier released before late subscribed")
		assert.False(t, r.Ready())

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.True(t, b.Started())
		assert.True(t, r.Ready())
		mu.Lock()
		assert.Equal(t, []receipt{{events.SourceFilesystem, 5 * time.Second}}, received)
		mu.Unlock()

		cancel()
		require.NoError(t, (<-result).err)
		assert.False(t, r.Ready(), "ready while stopped")
	})
}

func TestStopsInReverseStartOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl := newTimeline()
		// Each component takes one second to stop, so waiting for one before
		// cancelling the next shows in the times.
		component := func(name string) *fake {
			return &fake{name: name, run: func(ctx context.Context) error {
				<-ctx.Done()
				tl.mark(name + " cancelled")
				time.Sleep(time.Second)
				tl.mark(name + " returned")
				return ctx.Err() // a clean stop may report the cancellation
			}}
		}
		r := New(Options{Logger: quiet})
		require.NoError(t, r.Register(component("c"), DependsOn("b")))
		require.NoError(t, r.Register(component("a")))
		require.NoError(t, r.Register(component("b"), DependsOn("a")))
		cancel, result := runInBackground(r)

		time.Sleep(10 * time.Second)
		cancel()
		res := <-result
		require.NoError(t, res.err)
		assert.Equal(t, 13*time.Second, res.at.Sub(tl.t0))
		assert.Equal(t, []string{
			"c cancelled", "c returned", "b cancelled", "b returned", "a cancelled", "a returned",
		}, tl.sequence())
		assert.Equal(t, map[string]time.Duration{
			"c cancelled": 10 * time.Second, "c returned": 11 * time.Second,
			"b cancelled": 11 * time.Second, "b returned": 12 * time.Second,
			"a cancelled": 12 * time.Second, "a returned": 13 * time.Second,
		}, tl.times())
		for _, h := range r.Health() {
			assert.Equal(t, ComponentHealth{Name: h.Name, State: StateStopped, Healthy: true}, h)
		}
	})
}

func TestStopTimeoutNamesStuckComponent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		release := make(chan struct{})
		r := New(Options{Logger: quiet, StopTimeout: 5 * time.Second})
		require.NoError(t, r.Register(&fake{name: "a"}))
		require.NoError(t, r.Register(&fake{name: "stuck", run: func(ctx context.Context) error {
			<-ctx.Done()
			<-release // ignores cancellation
			return nil
		}}, DependsOn("a")))
		require.NoError(t, r.Register(&fake{name: "c"}, DependsOn("stuck")))
		cancel, result := runInBackground(r)

		time.Sleep(time.Second)
		cancel()
		res := <-result
		assert.Equal(t, 6*time.Second, res.at.Sub(t0), "Run must return exactly StopTimeout after cancellation")
		require.EqualError(t, res.err, `lifecycle: stop timeout 5s exceeded: "stuck" did not return; cancelled without waiting: "a"`)
		synctest.Wait()
		assert.Equal(t, map[string]State{"a": StateStopped, "stuck": StateRunning, "c": StateStopped}, states(r))

		close(release) // let the abandoned goroutine end before the bubble does
	})
}

func TestCriticalFailureStopsEverything(t *testing.T) {
	diskFull := errors.New("disk full")
	cases := []struct {
		name  string
		exit  func() error
		want  string
		cause error
	}{
		{"error", func() error { return diskFull }, `lifecycle: critical component "store" failed: disk full`, diskFull},
		{"returned nil before shutdown", func() error { return nil }, `lifecycle: critical component "store" failed: its Start returned before shutdown`, errExitedEarly},
		{"panic", func() error { panic("kaboom") }, `lifecycle: critical component "store" failed: panic: kaboom`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tl := newTimeline()
				stopped := func(name string) *fake {
					return &fake{name: name, run: func(ctx context.Context) error {
						<-ctx.Done()
						tl.mark(name + " stopped")
						return nil
					}}
				}
				r := New(Options{Logger: quiet})
				require.NoError(t, r.Register(&fake{name: "store", run: func(context.Context) error {
					time.Sleep(2 * time.Second)
					return tc.exit()
				}}, Critical()))
				require.NoError(t, r.Register(stopped("before")))
				require.NoError(t, r.Register(stopped("after"), DependsOn("store")))

				cancel, result := runInBackground(r)
				defer cancel()
				var err error
				select {
				case res := <-result: // returns by itself: nobody cancels ctx
					err = res.err
					assert.Equal(t, 2*time.Second, res.at.Sub(tl.t0))
				case <-time.After(time.Hour):
					cancel()
					<-result
					t.Fatal("Run did not return after a critical failure")
				}
				require.EqualError(t, err, tc.want)
				if tc.cause != nil {
					assert.ErrorIs(t, err, tc.cause)
				}
				assert.Equal(t, map[string]time.Duration{
					"before stopped": 2 * time.Second, "after stopped": 2 * time.Second,
				}, tl.times())
				store := healthOf(t, r, "store")
				assert.Equal(t, StateFailed, store.State)
				assert.False(t, store.Healthy)
				assert.Equal(t, map[string]State{"store": StateFailed, "before": StateStopped, "after": StateStopped}, states(r))
			})
		})
	}
}

func TestNonCriticalFailureKeepsOthersRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		r := New(Options{Bus: b, Logger: quiet})
		require.NoError(t, r.Register(&fake{name: "flaky", run: func(context.Context) error {
			time.Sleep(time.Second)
			return errors.New("boom")
		}}))
		// early fails before it subscribes; its dependent cannot start, and
		// the barrier must not wait for either.
		early := newSubscriber("early")
		early.run = func(context.Context) error {
			time.Sleep(2 * time.Second)
			return errors.New("cannot subscribe")
		}
		require.NoError(t, r.Register(early))
		var downstreamStarted atomic.Bool
		require.NoError(t, r.Register(&fake{name: "downstream", run: func(ctx context.Context) error {
			downstreamStarted.Store(true)
			<-ctx.Done()
			return nil
		}}, DependsOn("early")))
		var steadyCancelled atomic.Bool
		require.NoError(t, r.Register(&fake{name: "steady", run: func(ctx context.Context) error {
			<-ctx.Done()
			steadyCancelled.Store(true)
			return nil
		}}))
		cancel, result := runInBackground(r)

		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.False(t, b.Started())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.True(t, b.Started(), "barrier must not wait for a component that failed")
		assert.True(t, r.Ready())

		time.Sleep(time.Minute)
		synctest.Wait()
		assert.False(t, steadyCancelled.Load())
		assert.False(t, downstreamStarted.Load())
		health := r.Health()
		require.Len(t, health, 4)
		want := []struct {
			name  string
			state State
			err   string
		}{
			{"downstream", StateFailed, `not started: dependency "early" failed before it was ready`},
			{"early", StateFailed, "cannot subscribe"},
			{"flaky", StateFailed, "boom"},
			{"steady", StateRunning, ""},
		}
		for i, w := range want {
			h := health[i]
			assert.Equal(t, w.name, h.Name)
			assert.Equal(t, w.state, h.State, w.name)
			assert.Equal(t, w.err == "", h.Healthy, w.name)
			if w.err == "" {
				assert.NoError(t, h.Err, w.name)
			} else {
				assert.EqualError(t, h.Err, w.err, w.name)
			}
		}

		select {
		case res := <-result:
			t.Fatalf("Run returned after a non-critical failure: %v", res.err)
		default:
		}
		cancel()
		require.NoError(t, (<-result).err)
		assert.True(t, steadyCancelled.Load())
	})
}

func TestPanicInStartIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(Options{Logger: quiet})
		require.NoError(t, r.Register(&fake{name: "panicky", run: func(context.Context) error {
			panic("kaboom")
		}}))
		require.NoError(t, r.Register(&fake{name: "steady"}))
		cancel, result := runInBackground(r)
		synctest.Wait()

		h := healthOf(t, r, "panicky")
		assert.Equal(t, StateFailed, h.State)
		assert.False(t, h.Healthy)
		assert.EqualError(t, h.Err, "panic: kaboom")
		assert.Equal(t, StateRunning, healthOf(t, r, "steady").State)

		cancel()
		require.NoError(t, (<-result).err)
	})
	// A critical component's panic stops the registry: see
	// TestCriticalFailureStopsEverything/panic.
}

func TestStallDetectionFlipsHealthAfterStallLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		worker := &busyFake{fake: fake{name: "worker"}}
		r := New(Options{Logger: quiet, StallLimit: time.Minute})
		require.NoError(t, r.Register(worker))
		cancel, result := runInBackground(r)

		time.Sleep(5 * time.Second)
		worker.setBusy(time.Now())
		time.Sleep(time.Minute)
		assert.Equal(t, ComponentHealth{Name: "worker", State: StateRunning, Healthy: true}, healthOf(t, r, "worker"),
			"busy for exactly StallLimit is not yet stalled")

		time.Sleep(time.Nanosecond)
		h := healthOf(t, r, "worker")
		assert.False(t, h.Healthy)
		assert.EqualError(t, h.Err, "stalled: busy on one event for 1m0.000000001s")

		time.Sleep(30*time.Second - time.Nanosecond)
		assert.Equal(t, 95*time.Second, time.Since(t0))
		assert.EqualError(t, healthOf(t, r, "worker").Err, "stalled: busy on one event for 1m30s")

		worker.setIdle()
		assert.Equal(t, ComponentHealth{Name: "worker", State: StateRunning, Healthy: true}, healthOf(t, r, "worker"))

		cancel()
		require.NoError(t, (<-result).err)
	})
}

// slowConsumer subscribes to the bus in Start; its handler blocks until
// release is closed. It reports busy through its subscription.
type slowConsumer struct {
	bus     *bus.Bus
	release chan struct{}
	ready   chan struct{}
	sub     atomic.Pointer[bus.Subscription]
}

func (c *slowConsumer) Name() string                       { return "slow" }
func (c *slowConsumer) SubscriptionReady() <-chan struct{} { return c.ready }

func (c *slowConsumer) Start(ctx context.Context) error {
	sub, err := bus.Subscribe(c.bus, "slow", bus.Coalescing(bus.ByResourceKey), func(events.ResourceChanged) {
		<-c.release
	})
	if err != nil {
		return err
	}
	c.sub.Store(sub)
	close(c.ready)
	<-ctx.Done()
	sub.Unsubscribe()
	return nil
}

func (c *slowConsumer) BusySince() (time.Time, bool) {
	if sub := c.sub.Load(); sub != nil {
		return sub.BusySince()
	}
	return time.Time{}, false
}

func TestStallDetectionWithBusSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		slow := &slowConsumer{bus: b, release: make(chan struct{}), ready: make(chan struct{})}
		r := New(Options{Bus: b, Logger: quiet, StallLimit: 30 * time.Second})
		require.NoError(t, r.Register(slow))
		cancel, result := runInBackground(r)
		synctest.Wait()
		require.True(t, r.Ready())

		time.Sleep(time.Second)
		bus.Publish(b, events.ResourceChanged{
			Meta: events.NewMeta(""), Key: events.NewKey("Service", "", "web"),
			Operation: events.OperationUpdate, Source: events.SourceFilesystem,
		})
		synctest.Wait() // the handler is now blocked
		time.Sleep(30 * time.Second)
		assert.True(t, healthOf(t, r, "slow").Healthy, "busy for exactly StallLimit is not yet stalled")

		time.Sleep(time.Nanosecond)
		h := healthOf(t, r, "slow")
		assert.False(t, h.Healthy)
		assert.EqualError(t, h.Err, "stalled: busy on one event for 30.000000001s")

		close(slow.release)
		synctest.Wait()
		assert.Equal(t, ComponentHealth{Name: "slow", State: StateRunning, Healthy: true}, healthOf(t, r, "slow"))

		cancel()
		require.NoError(t, (<-result).err)
	})
}

// logRecorder keeps every log record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { panic("unused") }
func (h *logRecorder) WithGroup(string) slog.Handler            { panic("unused") }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

type healthLog struct {
	msg, component string
	at             time.Duration
}

// healthChanges returns the health-change records, as offsets from t0.
func (h *logRecorder) healthChanges(t0 time.Time) []healthLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []healthLog
	for _, r := range h.records {
		if r.Message != "lifecycle: component unhealthy" && r.Message != "lifecycle: component healthy again" {
			continue
		}
		l := healthLog{msg: r.Message, at: r.Time.Sub(t0)}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "component" {
				l.component = a.Value.String()
			}
			return true
		})
		out = append(out, l)
	}
	return out
}

func TestHealthEvaluatedPeriodicallyAndChangesLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		logs := &logRecorder{}
		worker := &busyFake{fake: fake{name: "worker"}}
		worker.setBusy(t0)
		checked := &checkedFake{fake: fake{name: "checked"}}
		r := New(Options{Logger: slog.New(logs), HealthInterval: 10 * time.Second, StallLimit: time.Minute})
		require.NoError(t, r.Register(worker))
		require.NoError(t, r.Register(checked))
		cancel, result := runInBackground(r)

		time.Sleep(25 * time.Second)
		failing := errors.New("upstream unreachable")
		checked.err.Store(&failing)
		time.Sleep(70 * time.Second)
		worker.setIdle() // at 95s
		time.Sleep(10 * time.Second)
		cancel()
		require.NoError(t, (<-result).err)

		// Ticks every 10s: checked fails from 25s, seen at 30s; worker is busy
		// exactly StallLimit at 60s (healthy) and longer at 70s; idle from
		// 95s, seen at 100s.
		assert.Equal(t, []healthLog{
			{"lifecycle: component unhealthy", "checked", 30 * time.Second},
			{"lifecycle: component unhealthy", "worker", 70 * time.Second},
			{"lifecycle: component healthy again", "worker", 100 * time.Second},
		}, logs.healthChanges(t0))
	})
}

func TestLeaderOnlyStartsWhenElected(t *testing.T) {
	t.Run("elected later", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tl := newTimeline()
			b := bus.New(bus.Options{Logger: quiet})
			defer b.Close()
			elected := make(chan struct{})
			r := New(Options{Bus: b, Logger: quiet, Elected: elected})
			require.NoError(t, r.Register(&fake{name: "watcher", run: startedThenWait(tl, "watcher")}))
			writer := newSubscriber("writer")
			writer.run = func(ctx context.Context) error {
				tl.mark("writer started")
				close(writer.ready)
				<-ctx.Done()
				return nil
			}
			require.NoError(t, r.Register(writer, LeaderOnly(), DependsOn("watcher")))
			cancel, result := runInBackground(r)

			time.Sleep(5 * time.Second)
			synctest.Wait()
			assert.Equal(t, map[string]time.Duration{"watcher started": 0}, tl.times())
			assert.True(t, b.Started(), "the barrier must not wait for leader-only components under election")
			assert.True(t, r.Ready(), "a follower is ready")
			assert.Equal(t, StatePending, healthOf(t, r, "writer").State)

			close(elected)
			synctest.Wait()
			assert.Equal(t, map[string]time.Duration{"watcher started": 0, "writer started": 5 * time.Second}, tl.times())
			assert.Equal(t, StateRunning, healthOf(t, r, "writer").State)

			cancel()
			require.NoError(t, (<-result).err)
		})
	})
	t.Run("never elected", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var started atomic.Bool
			r := New(Options{Logger: quiet, Elected: make(chan struct{})})
			require.NoError(t, r.Register(&fake{name: "writer", run: func(ctx context.Context) error {
				started.Store(true)
				return nil
			}}, LeaderOnly()))
			cancel, result := runInBackground(r)
			time.Sleep(time.Hour)
			cancel()
			require.NoError(t, (<-result).err)
			assert.False(t, started.Load())
			assert.Equal(t, StatePending, healthOf(t, r, "writer").State)
		})
	})
	t.Run("no election: leader at once, barrier waits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tl := newTimeline()
			b := bus.New(bus.Options{Logger: quiet})
			defer b.Close()
			r := New(Options{Bus: b, Logger: quiet})
			writer := newSubscriber("writer")
			writer.run = func(ctx context.Context) error {
				tl.mark("writer started")
				time.Sleep(3 * time.Second)
				close(writer.ready)
				<-ctx.Done()
				return nil
			}
			require.NoError(t, r.Register(writer, LeaderOnly()))
			cancel, result := runInBackground(r)

			time.Sleep(3*time.Second - time.Nanosecond)
			synctest.Wait()
			assert.Equal(t, map[string]time.Duration{"writer started": 0}, tl.times())
			assert.False(t, b.Started())
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			assert.True(t, b.Started())

			cancel()
			require.NoError(t, (<-result).err)
		})
	})
}

func TestRunWithCancelledContextReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var started atomic.Bool
		b := bus.New(bus.Options{Logger: quiet})
		r := New(Options{Bus: b, Logger: quiet})
		require.NoError(t, r.Register(&fake{name: "a", run: func(ctx context.Context) error {
			started.Store(true)
			<-ctx.Done()
			return nil
		}}))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, r.Run(ctx))
		assert.Zero(t, time.Since(t0))
		assert.False(t, started.Load())
		assert.False(t, b.Started())
		assert.EqualError(t, r.Run(context.Background()), "lifecycle: Run called twice")
	})
}

func TestRegisterRejects(t *testing.T) {
	r := New(Options{Logger: quiet})
	require.NoError(t, r.Register(&fake{name: "a"}))
	assert.EqualError(t, r.Register(nil), "lifecycle: nil component")
	assert.EqualError(t, r.Register(&fake{}), "lifecycle: component of type *lifecycle.fake has no name")
	assert.EqualError(t, r.Register(&fake{name: "a"}), `lifecycle: a component named "a" is registered`)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, r.Run(ctx))
	assert.EqualError(t, r.Register(&fake{name: "b"}), `lifecycle: cannot register "b": Run was called`)
}

func TestComponentsKeepRunContextValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		seen := make(chan any, 1)
		r := New(Options{Logger: quiet})
		require.NoError(t, r.Register(&fake{name: "a", run: func(ctx context.Context) error {
			seen <- ctx.Value(key{})
			<-ctx.Done()
			return nil
		}}))
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "trace-1"))
		result := make(chan error, 1)
		go func() { result <- r.Run(ctx) }()
		assert.Equal(t, "trace-1", <-seen)
		cancel()
		require.NoError(t, <-result)
	})
}

func TestStuckCriticalStartStopsRegistryAtStartTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl := newTimeline()
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		stuck := newSubscriber("stuck") // never signals SubscriptionReady
		stuck.run = func(ctx context.Context) error {
			<-ctx.Done()
			tl.mark("stuck cancelled")
			return nil
		}
		r := New(Options{Bus: b, Logger: quiet}) // DefaultStartTimeout: 1m
		require.NoError(t, r.Register(stuck, Critical()))
		require.NoError(t, r.Register(&fake{name: "steady", run: func(ctx context.Context) error {
			<-ctx.Done()
			tl.mark("steady stopped")
			return nil
		}}))
		cancel, result := runInBackground(r)
		defer cancel()

		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, ComponentHealth{Name: "stuck", State: StateStarting, Healthy: true}, healthOf(t, r, "stuck"),
			"still within StartTimeout")

		var res runResult
		select {
		case res = <-result: // returns by itself: nobody cancels ctx
		case <-time.After(time.Hour):
			cancel()
			<-result
			t.Fatal("Run did not return after a critical component's start timed out")
		}
		assert.Equal(t, time.Minute, res.at.Sub(tl.t0))
		require.EqualError(t, res.err, `lifecycle: "stuck" did not become ready within 1m0s`)
		assert.ErrorIs(t, res.err, ErrStartTimeout)
		assert.False(t, b.Started(), "barrier released although a critical component never subscribed")
		assert.Equal(t, map[string]time.Duration{"stuck cancelled": time.Minute, "steady stopped": time.Minute}, tl.times())
		h := healthOf(t, r, "stuck")
		assert.Equal(t, StateFailed, h.State)
		assert.False(t, h.Healthy)
		assert.EqualError(t, h.Err, `lifecycle: "stuck" did not become ready within 1m0s`)
		assert.Equal(t, StateStopped, healthOf(t, r, "steady").State)
	})
}

func TestStuckStartReleasesBarrierWithoutIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl := newTimeline()
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		stuck := newSubscriber("stuck") // never signals SubscriptionReady
		stuck.run = func(ctx context.Context) error {
			<-ctx.Done()
			tl.mark("stuck cancelled")
			return nil // after it was failed: must not turn into a clean stop
		}
		r := New(Options{Bus: b, Logger: quiet, StartTimeout: 10 * time.Second})
		require.NoError(t, r.Register(stuck))
		var downstreamStarted atomic.Bool
		require.NoError(t, r.Register(&fake{name: "downstream", run: func(ctx context.Context) error {
			downstreamStarted.Store(true)
			<-ctx.Done()
			return nil
		}}, DependsOn("stuck")))
		require.NoError(t, r.Register(&fake{name: "steady"}))
		cancel, result := runInBackground(r)

		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.False(t, b.Started())
		assert.False(t, r.Ready())
		assert.Equal(t, ComponentHealth{Name: "stuck", State: StateStarting, Healthy: true}, healthOf(t, r, "stuck"))

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.True(t, b.Started(), "barrier still held by a stuck non-critical component")
		assert.True(t, r.Ready())
		assert.Equal(t, map[string]time.Duration{"stuck cancelled": 10 * time.Second}, tl.times())

		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case res := <-result:
			t.Fatalf("Run returned after a non-critical start timeout: %v", res.err)
		default:
		}
		assert.False(t, downstreamStarted.Load())
		health := r.Health()
		require.Len(t, health, 3)
		downstream, steady, stuckHealth := health[0], health[1], health[2]
		assert.Equal(t, StateFailed, downstream.State)
		assert.False(t, downstream.Healthy)
		assert.EqualError(t, downstream.Err, `not started: dependency "stuck" failed before it was ready`)
		assert.Equal(t, ComponentHealth{Name: "steady", State: StateRunning, Healthy: true}, steady)
		assert.Equal(t, StateFailed, stuckHealth.State)
		assert.False(t, stuckHealth.Healthy)
		assert.EqualError(t, stuckHealth.Err, `lifecycle: "stuck" did not become ready within 10s`)
		assert.ErrorIs(t, stuckHealth.Err, ErrStartTimeout)

		cancel()
		require.NoError(t, (<-result).err)
		assert.Equal(t, map[string]State{"stuck": StateFailed, "downstream": StateFailed, "steady": StateStopped}, states(r))
	})
}

func TestSlowStartWithinStartTimeoutIsFine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// StartTimeout counts from each component's own Start: b starts when
		// a has subscribed at 5s, and subscribes 10s-1ns after that, 15s-1ns
		// after Run.
		slow := func(name string, delay time.Duration) *subscriber {
			s := newSubscriber(name)
			s.run = func(ctx context.Context) error {
				time.Sleep(delay)
				close(s.ready)
				<-ctx.Done()
				return nil
			}
			return s
		}
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		r := New(Options{Bus: b, Logger: quiet, StartTimeout: 10 * time.Second})
		require.NoError(t, r.Register(slow("a", 5*time.Second), Critical()))
		require.NoError(t, r.Register(slow("b", 10*time.Second-time.Nanosecond), Critical(), DependsOn("a")))
		cancel, result := runInBackground(r)

		time.Sleep(15*time.Second - 2*time.Nanosecond)
		synctest.Wait()
		assert.False(t, b.Started())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.True(t, b.Started())
		assert.True(t, r.Ready())

		time.Sleep(time.Minute)
		synctest.Wait()
		for _, h := range r.Health() {
			assert.Equal(t, ComponentHealth{Name: h.Name, State: StateRunning, Healthy: true}, h)
		}
		cancel()
		require.NoError(t, (<-result).err)
	})
}

// texts flattens every record to its message and attributes.
func (h *logRecorder) texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		s := r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			return true
		})
		out = append(out, s)
	}
	return out
}

// attr is the value of key in the first record with msg about component.
func (h *logRecorder) attr(t *testing.T, msg, component, key string) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		var comp, value string
		found := false
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "component":
				comp = a.Value.String()
			case key:
				value, found = a.Value.String(), true
			}
			return true
		})
		if comp == component && found {
			return value
		}
	}
	t.Fatalf("no %q record for %q with %q", msg, component, key)
	return ""
}

func TestErrorsAreRedactedInLogsAndRunError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "hunter2"
		leak := errors.New("dial postgres://admin:hunter2@db:5432/app: password=hunter2 rejected")
		const redacted = "dial postgres://[redacted]@db:5432/app: password=[redacted] rejected"
		logs := &logRecorder{}
		r := New(Options{Logger: slog.New(logs), HealthInterval: 10 * time.Second})
		require.NoError(t, r.Register(&fake{name: "flaky", run: func(context.Context) error {
			time.Sleep(time.Second)
			return leak
		}}))
		require.NoError(t, r.Register(&fake{name: "panicky", run: func(context.Context) error {
			time.Sleep(2 * time.Second)
			panic("token=hunter2")
		}}))
		checked := &checkedFake{fake: fake{name: "checked"}}
		checked.err.Store(&leak)
		require.NoError(t, r.Register(checked))
		require.NoError(t, r.Register(&fake{name: "noisy", run: func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("flush: secret=hunter2")
		}}))
		require.NoError(t, r.Register(&fake{name: "store", run: func(context.Context) error {
			time.Sleep(20 * time.Second)
			return fmt.Errorf("open store: %w", leak)
		}}, Critical()))

		err := r.Run(context.Background()) // the critical failure at 20s ends it
		require.EqualError(t, err, `lifecycle: critical component "store" failed: open store: `+redacted)
		assert.ErrorIs(t, err, leak, "redaction must keep the error chain")

		for _, text := range logs.texts() {
			assert.NotContains(t, text, secret)
		}
		assert.Equal(t, redacted, logs.attr(t, "lifecycle: component failed; the others keep running", "flaky", "error"))
		assert.Equal(t, "panic: token=[redacted]", logs.attr(t, "lifecycle: component failed; the others keep running", "panicky", "error"))
		assert.Equal(t, "token=[redacted]", logs.attr(t, "lifecycle: component panicked", "panicky", "panic"))
		assert.Equal(t, redacted, logs.attr(t, "lifecycle: component unhealthy", "checked", "error"))
		assert.Equal(t, "flush: secret=[redacted]", logs.attr(t, "lifecycle: component failed while stopping", "noisy", "error"))
		assert.Equal(t, `lifecycle: critical component "store" failed: open store: `+redacted,
			logs.attr(t, "lifecycle: stopping after a critical failure", "", "error"))
	})
}

func TestStopReasonIsRedacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecorder{}
		r := New(Options{Logger: slog.New(logs)})
		require.NoError(t, r.Register(&fake{name: "a"}))
		ctx, cancel := context.WithCancelCause(context.Background())
		result := make(chan error, 1)
		go func() { result <- r.Run(ctx) }()
		synctest.Wait()
		cancel(errors.New("lease lost: Authorization: Bearer abc.def"))
		require.NoError(t, <-result)
		assert.Equal(t, "lease lost: Authorization: [redacted]", logs.attr(t, "lifecycle: stopping", "", "reason"))
	})
}
