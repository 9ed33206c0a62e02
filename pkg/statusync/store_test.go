package statusync_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// epoch is the virtual time at which every synctest bubble starts.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

var gitKey = events.NewKey("MCPServer", "", "git")

func meta(correlationID string) events.Meta {
	return events.Meta{Time: events.Now(), CorrelationID: correlationID}
}

// call is one call the store made to the writer.
type call struct {
	At      time.Time
	Status  statusync.Status // WriteStatus
	Deleted events.Key       // DeleteStatus
}

// fakeWriter records calls. fail decides the result of the n'th call
// (from 1); block, if set, makes every call wait for a receive from it.
type fakeWriter struct {
	fail  func(n int) error
	block chan struct{}

	mu    sync.Mutex
	calls []call
}

func (w *fakeWriter) WriteStatus(ctx context.Context, st statusync.Status) error {
	return w.record(ctx, call{At: time.Now().UTC(), Status: st})
}

func (w *fakeWriter) DeleteStatus(ctx context.Context, key events.Key) error {
	return w.record(ctx, call{At: time.Now().UTC(), Deleted: key})
}

func (w *fakeWriter) record(ctx context.Context, c call) error {
	w.mu.Lock()
	w.calls = append(w.calls, c)
	n := len(w.calls)
	w.mu.Unlock()
	if w.block != nil {
		select {
		case <-w.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if w.fail != nil {
		return w.fail(n)
	}
	return nil
}

func (w *fakeWriter) Calls() []call {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]call(nil), w.calls...)
}

// observer records the store's StatusSynced and StatusSyncFailed events.
type observer struct {
	mu     sync.Mutex
	events []events.Event
}

func observe(t *testing.T, b *bus.Bus) *observer {
	o := &observer{}
	record := func(e events.Event) {
		o.mu.Lock()
		o.events = append(o.events, e)
		o.mu.Unlock()
	}
	_, err := b.Subscribe(bus.SubscriberOptions{
		Name: "test-observer", Delivery: bus.Lossy(1000),
		Handlers: []bus.Handler{
			bus.On(func(e events.StatusSynced) { record(e) }),
			bus.On(func(e events.StatusSyncFailed) { record(e) }),
		},
	})
	require.NoError(t, err)
	return o
}

func (o *observer) Events() []events.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]events.Event(nil), o.events...)
}

type harness struct {
	bus      *bus.Bus
	store    *statusync.Store
	observed *observer
	cancel   context.CancelFunc
	done     chan error
}

// startStore runs a store on a started bus. Call stop before the bubble
// ends.
func startStore(t *testing.T, opts statusync.StoreOptions) *harness {
	b := bus.New(bus.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := &harness{bus: b, observed: observe(t, b), store: statusync.NewStore(b, opts), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.store.Start(ctx) }()
	<-h.store.SubscriptionReady()
	b.Start()
	return h
}

func (h *harness) stop(t *testing.T) {
	h.cancel()
	require.NoError(t, <-h.done)
	h.bus.Close()
}

// publish publishes e and waits until the store and its writer are idle.
func (h *harness) publish(e events.Event) {
	h.bus.Publish(e)
	synctest.Wait()
}

func TestStoreStateMachine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{}
		h := startStore(t, statusync.StoreOptions{Writer: w})
		defer h.stop(t)
		nonCanonical := events.Key{Kind: "MCPServer", Name: "git"}
		var want []statusync.Status
		step := func(e events.Event, st statusync.Status) {
			t.Helper()
			h.publish(e)
			got, ok := h.store.Get(nonCanonical)
			require.True(t, ok)
			assert.Equal(t, st, got)
			want = append(want, st)
		}

		step(events.ResourceChanged{Meta: meta("c1"), Key: nonCanonical, Operation: events.OperationCreate},
			statusync.Status{Key: gitKey, State: statusync.StatePending, CorrelationID: "c1"})
		step(events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1},
			statusync.Status{Key: gitKey, State: statusync.StateReconciling, CorrelationID: "c1"})

		time.Sleep(2 * time.Second)
		failedAt, retryAt := epoch.Add(2*time.Second), epoch.Add(7*time.Second)
		step(events.ResourceFailed{Meta: meta("c1"), Key: gitKey, Attempt: 1, NextRetry: retryAt,
			Error: `Get "https://bob:hunter2@git.example.com/x": token=abc refused`},
			statusync.Status{Key: gitKey, State: statusync.StateError, LastReconcileTime: failedAt,
				LastError:  `Get "https://[redacted]@git.example.com/x": token=[redacted] refused`,
				RetryCount: 0, NextRetry: retryAt, CorrelationID: "c1"})

		time.Sleep(5 * time.Second)
		step(events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 2},
			statusync.Status{Key: gitKey, State: statusync.StateReconciling, LastReconcileTime: failedAt,
				LastError: `Get "https://[redacted]@git.example.com/x": token=[redacted] refused`, CorrelationID: "c1"})
		permanentAt := epoch.Add(7 * time.Second)
		// A permanent error is an Error awaiting a fix: no retry is
		// scheduled. Failed is for transient errors whose retries ran out.
		step(events.ResourceFailed{Meta: meta("c1"), Key: gitKey, Attempt: 3, Permanent: true, Error: "invalid spec"},
			statusync.Status{Key: gitKey, State: statusync.StateError, LastReconcileTime: permanentAt,
				LastError: "invalid spec", RetryCount: 2, CorrelationID: "c1"})

		time.Sleep(time.Minute)
		step(events.ResourceChanged{Meta: meta("c2"), Key: gitKey, Operation: events.OperationUpdate},
			statusync.Status{Key: gitKey, State: statusync.StatePending, LastReconcileTime: permanentAt,
				LastError: "invalid spec", RetryCount: 2, CorrelationID: "c2"})
		syncedAt := epoch.Add(67 * time.Second)
		step(events.ResourceSynced{Meta: meta("c2"), Key: gitKey, Attempt: 1},
			statusync.Status{Key: gitKey, State: statusync.StateSynced, LastReconcileTime: syncedAt, CorrelationID: "c2"})

		h.publish(events.ResourceSynced{Meta: meta("c3"), Key: nonCanonical, Deleted: true})
		_, ok := h.store.Get(gitKey)
		assert.False(t, ok, "a deleted resource is forgotten")
		assert.Empty(t, h.store.List())
		assert.Zero(t, h.store.Entries(), "once its deletion is written, nothing of the key is kept")

		var wantCalls []call
		var wantEvents []events.Event
		for i, st := range want {
			at := h.observed.Events()[i].Metadata().Time
			wantCalls = append(wantCalls, call{At: at, Status: st})
			wantEvents = append(wantEvents, events.StatusSynced{Meta: events.Meta{Time: at, CorrelationID: st.CorrelationID},
				Key: gitKey, Category: events.StatusWritten})
		}
		end := epoch.Add(67 * time.Second)
		wantCalls = append(wantCalls, call{At: end, Deleted: gitKey})
		wantEvents = append(wantEvents, events.StatusSynced{Meta: events.Meta{Time: end, CorrelationID: "c3"},
			Key: gitKey, Category: events.StatusDeleted})
		assert.Equal(t, wantCalls, w.Calls(), "the writer receives every state, in order")
		assert.Equal(t, wantEvents, h.observed.Events())
	})
}

func TestStoreListIsSortedByKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startStore(t, statusync.StoreOptions{})
		defer h.stop(t)
		keys := []events.Key{
			events.NewKey("Workflow", "team", "a"), events.NewKey("MCPServer", "", "z"), events.NewKey("MCPServer", "", "b"),
		}
		for _, k := range keys {
			h.publish(events.ResourceChanged{Meta: meta(k.Name), Key: k})
		}
		var got []string
		for _, st := range h.store.List() {
			got = append(got, st.Key.String())
		}
		assert.Equal(t, []string{"MCPServer/default/b", "MCPServer/default/z", "Workflow/team/a"}, got)
		assert.Len(t, h.observed.Events(), 3, "a memory-only store still ends each chain with StatusSynced")
	})
}

func TestStoreSkipsAWriteEqualToTheLastOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{}
		h := startStore(t, statusync.StoreOptions{Writer: w})
		defer h.stop(t)
		synced := events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1}
		h.publish(synced)
		h.publish(synced) // a duplicate leaves the status as it is

		assert.Len(t, w.Calls(), 1)
		assert.Equal(t, []events.Event{
			events.StatusSynced{Meta: events.Meta{Time: epoch, CorrelationID: "c1"}, Key: gitKey, Category: events.StatusWritten},
			events.StatusSynced{Meta: events.Meta{Time: epoch, CorrelationID: "c1"}, Key: gitKey, Category: events.StatusUnchanged},
		}, h.observed.Events())
	})
}

func TestStoreRetriesFailedWritesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unreachable := statusync.WithCategory("api_server_unreachable",
			errors.New(`Patch "https://u:pw@api/status": dial tcp: refused`))
		w := &fakeWriter{fail: func(n int) error {
			if n <= 3 {
				return unreachable
			}
			return nil
		}}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler)})
		defer h.stop(t)
		h.publish(events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		time.Sleep(time.Hour)
		synctest.Wait()

		var at []time.Duration
		for _, c := range w.Calls() {
			at = append(at, c.At.Sub(epoch))
		}
		assert.Equal(t, []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}, at,
			"retries after 1s, 2s, 4s: the default base delay doubling")
		failed := func(d time.Duration, attempt int) events.Event {
			return events.StatusSyncFailed{Meta: events.Meta{Time: epoch.Add(d), CorrelationID: "c1"}, Key: gitKey,
				Category: "api_server_unreachable", Error: `Patch "https://[redacted]@api/status": dial tcp: refused`, Attempt: attempt}
		}
		assert.Equal(t, []events.Event{
			failed(0, 1), failed(time.Second, 2), failed(3*time.Second, 3),
			events.StatusSynced{Meta: events.Meta{Time: epoch.Add(7 * time.Second), CorrelationID: "c1"}, Key: gitKey,
				Category: events.StatusWritten},
		}, h.observed.Events())
	})
}

func TestStoreChangesDuringBackoffWaitForTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{fail: func(n int) error {
			if n == 1 {
				return errors.New("conflict")
			}
			return nil
		}}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler),
			RetryBaseDelay: 10 * time.Second})
		defer h.stop(t)
		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey})
		time.Sleep(4 * time.Second)
		h.publish(events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		h.publish(events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		require.Len(t, w.Calls(), 1, "a change does not cut a key's backoff short")
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []call{
			{At: epoch, Status: statusync.Status{Key: gitKey, State: statusync.StatePending, CorrelationID: "c1"}},
			{At: epoch.Add(10 * time.Second), Status: statusync.Status{Key: gitKey, State: statusync.StateSynced,
				LastReconcileTime: epoch.Add(4 * time.Second), CorrelationID: "c1"}},
		}, w.Calls(), "the retry writes the newest state")
		assert.Equal(t, []events.Event{
			events.StatusSyncFailed{Meta: events.Meta{Time: epoch, CorrelationID: "c1"}, Key: gitKey,
				Category: statusync.CategoryOther, Error: "conflict", Attempt: 1},
			events.StatusSynced{Meta: events.Meta{Time: epoch.Add(10 * time.Second), CorrelationID: "c1"}, Key: gitKey,
				Category: events.StatusWritten},
		}, h.observed.Events())
	})
}

func TestStoreWritesAChangeMadeDuringASucceedingRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		w := &fakeWriter{fail: func(n int) error {
			switch n {
			case 1:
				return errors.New("conflict")
			case 2:
				<-gate // the retry is in flight while the key changes
			}
			return nil
		}}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler)})
		defer h.stop(t)
		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey})
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, w.Calls(), 2)
		h.publish(events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		close(gate)
		synctest.Wait()

		calls := w.Calls()
		require.Len(t, calls, 3, "the retry wrote the older state, so the newer one is written next")
		assert.Equal(t, statusync.StateReconciling, calls[2].Status.State)
		assert.Equal(t, epoch.Add(time.Second), calls[2].At, "at once: the retry succeeded")
	})
}

func TestStoreChangeDuringAFailingWriteWaitsForTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		w := &fakeWriter{fail: func(n int) error {
			if n == 1 {
				<-gate // the first write is in flight while the key changes, then fails
				return errors.New("conflict")
			}
			return nil
		}}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler),
			RetryBaseDelay: 10 * time.Second})
		defer h.stop(t)
		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey})
		require.Len(t, w.Calls(), 1)
		h.publish(events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		close(gate)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []call{
			{At: epoch, Status: statusync.Status{Key: gitKey, State: statusync.StatePending, CorrelationID: "c1"}},
			{At: epoch.Add(10 * time.Second), Status: statusync.Status{Key: gitKey, State: statusync.StateReconciling, CorrelationID: "c1"}},
		}, w.Calls(), "the retry, after RetryBaseDelay, writes the newest state; nothing is written before it")
	})
}

func TestStoreWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A writer that hangs until its context ends: the timeout ends it.
		w := &fakeWriter{block: make(chan struct{})}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler),
			WriteTimeout: 3 * time.Second, RetryBaseDelay: time.Minute})
		defer h.stop(t)
		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey})
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Equal(t, []events.Event{
			events.StatusSyncFailed{Meta: events.Meta{Time: epoch.Add(3 * time.Second), CorrelationID: "c1"}, Key: gitKey,
				Category: statusync.CategoryTimeout, Error: "context deadline exceeded", Attempt: 1},
		}, h.observed.Events())
	})
}

func TestStoreSlowWriterDelaysNeitherStateNorCoalescing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{block: make(chan struct{})}
		h := startStore(t, statusync.StoreOptions{Writer: w, WriteTimeout: time.Hour})
		defer h.stop(t)
		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey})
		require.Len(t, w.Calls(), 1, "the first write is in flight and blocked")

		updates := []events.Event{
			events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1},
			events.ResourceFailed{Meta: meta("c1"), Key: gitKey, Attempt: 1, Error: "boom", NextRetry: epoch.Add(time.Second)},
			events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 2},
			events.ResourceChanged{Meta: meta("c2"), Key: gitKey},
			events.ReconciliationStarted{Meta: meta("c2"), Key: gitKey, Attempt: 1},
			events.ResourceSynced{Meta: meta("c2"), Key: gitKey, Attempt: 1},
		}
		wantStates := []statusync.State{statusync.StateReconciling, statusync.StateError, statusync.StateReconciling,
			statusync.StatePending, statusync.StateReconciling, statusync.StateSynced}
		for i, e := range updates {
			h.publish(e)
			st, _ := h.store.Get(gitKey)
			assert.Equal(t, wantStates[i], st.State, "Get shows the newest state while the write is blocked")
		}
		newest := statusync.Status{Key: gitKey, State: statusync.StateSynced, LastReconcileTime: epoch, CorrelationID: "c2"}

		w.block <- struct{}{} // finish the first write
		synctest.Wait()
		w.block <- struct{}{} // and the one write it left to do
		synctest.Wait()

		calls := w.Calls()
		require.Len(t, calls, 2, "six changes during one write give one more write")
		assert.Equal(t, newest, calls[1].Status)
		assert.Len(t, h.observed.Events(), 2)
	})
}

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}

// logged is the gist of a log record.
type logged struct {
	At         time.Duration // since epoch
	Msg        string
	Attempt    int64
	Suppressed int64
}

func (l *logRecorder) Logged() []logged {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logged
	for _, r := range l.records {
		g := logged{At: r.Time.Sub(epoch), Msg: r.Message}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "attempt":
				g.Attempt = a.Value.Int64()
			case "unloggedFailures":
				g.Suppressed = a.Value.Int64()
			}
			return true
		})
		out = append(out, g)
	}
	return out
}

func TestStoreThrottlesFailureLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healed atomic.Bool
		w := &fakeWriter{fail: func(int) error {
			if healed.Load() {
				return nil
			}
			return errors.New("unavailable")
		}}
		logs := &logRecorder{}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(logs)})
		defer h.stop(t)
		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey})
		// Attempts at 0, 1, 3, 7, 15, 31, 63, 127, 255, 511, then every 5m
		// (the maximum delay): 811, 1111.
		time.Sleep(1200 * time.Second)
		synctest.Wait()
		require.Len(t, w.Calls(), 12)
		healed.Store(true)
		time.Sleep(time.Hour) // attempt 13 at 1411 succeeds
		synctest.Wait()

		const failed, recovered = "status write failed; retrying with backoff", "status write recovered"
		s := time.Second
		assert.Equal(t, []logged{
			{At: 0, Msg: failed, Attempt: 1},
			{At: 31 * s, Msg: failed, Attempt: 6, Suppressed: 4},  // 30s after the first
			{At: 127 * s, Msg: failed, Attempt: 8, Suppressed: 1}, // ≥ 60s later
			{At: 255 * s, Msg: failed, Attempt: 9},                // ≥ 120s later
			{At: 511 * s, Msg: failed, Attempt: 10},               // ≥ 240s later
			{At: 811 * s, Msg: failed, Attempt: 11},               // ≥ 300s later: the cap
			{At: 1111 * s, Msg: failed, Attempt: 12},
			{At: 1411 * s, Msg: recovered},
		}, logs.Logged())
	})
}

func TestStoreStartsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startStore(t, statusync.StoreOptions{})
		defer h.stop(t)
		assert.EqualError(t, h.store.Start(context.Background()), "status store: started twice")
		assert.Equal(t, "status-store", h.store.Name())
		_, busy := h.store.BusySince()
		assert.False(t, busy)
	})
}

func TestCategoryOf(t *testing.T) {
	assert.Equal(t, "conflict", statusync.CategoryOf(
		errors.Join(errors.New("x"), statusync.WithCategory("conflict", errors.New("409")))))
	assert.Equal(t, statusync.CategoryTimeout, statusync.CategoryOf(context.DeadlineExceeded))
	assert.Equal(t, statusync.CategoryOther, statusync.CategoryOf(errors.New("boom")))
	assert.NoError(t, statusync.WithCategory("x", nil))
}

// A writer that skips a write (a follower's) makes the store say skipped,
// not written, and not take the status as written: the same status is
// written once the writer writes again, rather than found unchanged.
func TestStoreReportsASkippedWriteAsSkippedNotWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var leading atomic.Bool
		w := &fakeWriter{fail: func(int) error {
			if !leading.Load() {
				return fmt.Errorf("kube status writer: %w", statusync.ErrSkipped)
			}
			return nil
		}}
		h := startStore(t, statusync.StoreOptions{Writer: w})
		defer h.stop(t)
		synced := events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1}
		h.publish(synced)
		leading.Store(true)
		h.publish(synced)

		assert.Len(t, w.Calls(), 2, "the skipped status is offered again")
		assert.Equal(t, []events.Event{
			events.StatusSynced{Meta: events.Meta{Time: epoch, CorrelationID: "c1"}, Key: gitKey, Category: events.StatusSkipped},
			events.StatusSynced{Meta: events.Meta{Time: epoch, CorrelationID: "c1"}, Key: gitKey, Category: events.StatusWritten},
		}, h.observed.Events())
	})
}

func TestHeldWritesWaitAndThenWriteEachResourceOnceWithItsNewestState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{}
		hold := make(chan struct{})
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler), HoldWrites: hold})
		defer h.stop(t)
		other := events.NewKey("Workflow", "", "deploy")

		h.publish(events.ResourceChanged{Meta: meta("c1"), Key: gitKey, Operation: events.OperationCreate})
		h.publish(events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		h.publish(events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		h.publish(events.ResourceChanged{Meta: meta("c2"), Key: other, Operation: events.OperationCreate})
		h.publish(events.ResourceFailed{Meta: meta("c2"), Key: other, Attempt: 1, Error: "invalid"})
		assert.Empty(t, w.Calls(), "nothing is written while held")
		st, ok := h.store.Get(gitKey)
		require.True(t, ok, "the status is kept and shown meanwhile")
		assert.Equal(t, statusync.StateSynced, st.State)
		quiet, _ := h.store.Quiescent(time.Now())
		assert.False(t, quiet, "held writes are work to do")

		close(hold)
		synctest.Wait()
		states := map[events.Key]statusync.State{}
		for _, c := range w.Calls() {
			_, again := states[c.Status.Key]
			assert.False(t, again, "%s written twice", c.Status.Key)
			states[c.Status.Key] = c.Status.State
		}
		assert.Equal(t, map[events.Key]statusync.State{gitKey: statusync.StateSynced, other: statusync.StateFailed}, states)
		quiet, _ = h.store.Quiescent(time.Now())
		assert.True(t, quiet)
	})
}

// The store keeps the times of the pipeline's events (UTC, no monotonic
// reading) as instants; any other time.Time, and the Unix epoch, which an
// instant cannot tell from the zero time, comes back exactly as it went in,
// location and monotonic reading included.
func TestStoreGivesBackEveryTimeExactly(t *testing.T) {
	local := time.Now() // outside the bubble: with a monotonic reading, in time.Local
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{}
		h := startStore(t, statusync.StoreOptions{Writer: w})
		defer h.stop(t)
		zoned := epoch.Add(time.Second).In(time.FixedZone("X", 3600))
		unixEpoch := time.Unix(0, 0).UTC()
		for _, c := range []struct {
			e     events.Event
			want  statusync.Status
			exact int
		}{
			{events.ResourceFailed{Meta: events.Meta{Time: local, CorrelationID: "c1"}, Key: gitKey, Attempt: 1, Error: "boom", NextRetry: zoned},
				statusync.Status{Key: gitKey, State: statusync.StateError, LastReconcileTime: local, LastError: "boom",
					NextRetry: zoned, CorrelationID: "c1"}, 1},
			{events.ResourceSynced{Meta: events.Meta{Time: unixEpoch, CorrelationID: "c2"}, Key: gitKey, Attempt: 1},
				statusync.Status{Key: gitKey, State: statusync.StateSynced, LastReconcileTime: unixEpoch, CorrelationID: "c2"}, 1},
			{events.ResourceSynced{Meta: events.Meta{Time: epoch, CorrelationID: "c3"}, Key: gitKey, Attempt: 1},
				statusync.Status{Key: gitKey, State: statusync.StateSynced, LastReconcileTime: epoch, CorrelationID: "c3"}, 0},
		} {
			h.publish(c.e)
			got, ok := h.store.Get(gitKey)
			require.True(t, ok)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.want, w.Calls()[len(w.Calls())-1].Status, "the writer is given the same")
			assert.Equal(t, c.exact, h.store.ExactTimes(), "kept as time.Time only while an instant cannot hold it")
		}
	})
}
