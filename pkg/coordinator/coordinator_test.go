package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

const kind = "MCPServer"

var (
	keyA    = events.NewKey(kind, "default", "a")
	keyB    = events.NewKey(kind, "default", "b")
	keyC    = events.NewKey(kind, "default", "c")
	orphan  = events.NewKey(kind, "default", "orphan")
	errBoom = errors.New("boom")
	exact   = coordinator.Options{Jitter: -1} // no jitter: retry times are exact
	failing = func(context.Context, reconcilers.Request) reconcilers.Result { return reconcilers.Result{Err: errBoom} }
	backoff = []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 31 * time.Second}
)

func TestTriggerReachesResourceSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			time.Sleep(3 * time.Second)
			return reconcilers.Result{Deleted: true}
		}
		h := run(t, coordinator.Options{}, f)

		h.trigger(events.ReasonChange, "corr-1", events.Key{Kind: kind, Name: "a"}) // namespace "" is "default"
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []call{{At: 0, Req: reconcilers.Request{Key: keyA, Attempt: 1, CorrelationID: "corr-1"}}}, f.Calls())
		assert.Equal(t, []events.Event{
			events.ReconciliationStarted{Meta: events.Meta{Time: h.at(0), CorrelationID: "corr-1"}, Key: keyA, Attempt: 1},
			events.ResourceSynced{Meta: events.Meta{Time: h.at(3 * time.Second), CorrelationID: "corr-1"}, Key: keyA, Attempt: 1,
				Duration: 3 * time.Second, Deleted: true},
		}, h.events())
	})
}

func TestTriggerBeforeStartIsReconciledAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		h := newHarness(t, coordinator.Options{}, f)
		h.c.Trigger(keyA)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, f.Calls(), "nothing runs before Start")

		h.startCoordinator()
		synctest.Wait()
		require.Len(t, f.Calls(), 1)
		assert.Equal(t, time.Second, f.Calls()[0].At)
		assert.Error(t, h.c.Start(context.Background()), "a second Start is refused")
	})
}

func TestFailingReconcilerBacksOffExactlyThenFailsForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = failing
		h := run(t, exact, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(24 * time.Hour) // long after the last retry: nothing more may happen
		synctest.Wait()

		calls := f.Calls()
		require.Len(t, calls, 6, "1 attempt + MaxRetries (5) retries, then no more")
		for i, c := range calls {
			assert.Equal(t, reconcilers.Request{Key: keyA, Attempt: i + 1, CorrelationID: "corr-1"}, c.Req)
			assert.Equal(t, backoff[i], c.At, "attempt %d", i+1)
		}
		failed := eventsOf[events.ResourceFailed](h)
		require.Len(t, failed, 6)
		for i, e := range failed {
			want := events.ResourceFailed{Meta: events.Meta{Time: h.at(backoff[i]), CorrelationID: "corr-1"},
				Key: keyA, Error: "boom", Attempt: i + 1}
			if i < 5 {
				want.NextRetry = h.at(backoff[i+1])
			}
			assert.Equal(t, want, e, "attempt %d", i+1)
		}
		assert.False(t, failed[5].WillRetry(), "the sixth failure is final")
		assert.Len(t, eventsOf[events.ReconciliationStarted](h), 6)
	})
}

func TestJitteredBackoffDelays(t *testing.T) {
	b := coordinator.NewJitteredBackoff[string](time.Second, 10*time.Second, 0.25, func() float64 { return 0.5 })
	// base·2^(n-1), capped at 10s, stretched by 0.25·0.5; where that passes
	// 10s, 10s shrunk by 0.25·0.5 instead.
	want := []time.Duration{1125 * time.Millisecond, 2250 * time.Millisecond, 4500 * time.Millisecond, 9 * time.Second,
		8750 * time.Millisecond, 8750 * time.Millisecond}
	for i, w := range want {
		assert.Equal(t, w, b.When("a"), "failure %d", i+1)
		assert.Equal(t, w, b.LastDelay("a"))
		assert.Equal(t, i+1, b.NumRequeues("a"))
	}
	assert.Equal(t, 1125*time.Millisecond, b.When("b"), "keys back off independently")

	b.Forget("a")
	assert.Zero(t, b.NumRequeues("a"))
	assert.Zero(t, b.LastDelay("a"))
	assert.Equal(t, 1125*time.Millisecond, b.When("a"), "Forget starts again from base")

	for range 200 {
		b.When("many")
	}
	assert.Equal(t, 8750*time.Millisecond, b.LastDelay("many"), "no overflow after many failures")

	// At the cap, keys that fail together still spread out: the jitter
	// spans (max·(1-jitter), max], never above max.
	var draw float64
	capped := coordinator.NewJitteredBackoff[int](time.Second, 10*time.Second, 0.2, func() float64 { return draw })
	var atCap []time.Duration
	for key, r := range []float64{0, 0.5, 0.75} {
		draw = r
		for range 10 {
			capped.When(key)
		}
		atCap = append(atCap, capped.LastDelay(key))
	}
	assert.Equal(t, []time.Duration{10 * time.Second, 9 * time.Second, 8500 * time.Millisecond}, atCap)

	stretched := coordinator.NewJitteredBackoff[string](4*time.Second, 5*time.Second, 0.5, func() float64 { return 0.75 })
	assert.Equal(t, 3125*time.Millisecond, stretched.When("a"), "4s·1.375 = 5.5s passes the maximum: 5s less 5s·0.375")

	for _, jitter := range []float64{0, -1} {
		plain := coordinator.NewJitteredBackoff[string](time.Second, time.Minute, jitter, func() float64 { return 0.99 })
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
			[]time.Duration{plain.When("a"), plain.When("a"), plain.When("a")}, "jitter %v is none", jitter)
	}
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			return reconcilers.Result{Err: fmt.Errorf("parse: %w", reconcilers.Permanent(errors.New("invalid definition")))}
		}
		h := run(t, exact, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Len(t, f.Calls(), 1)
		assert.Equal(t, []events.ResourceFailed{{Meta: events.Meta{Time: h.at(0), CorrelationID: "corr-1"}, Key: keyA,
			Error: "parse: invalid definition", Attempt: 1, Permanent: true}}, eventsOf[events.ResourceFailed](h))
	})
}

func TestTriggerDuringReconcileRunsItOnceMoreAfterwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			time.Sleep(5 * time.Second)
			return reconcilers.Result{}
		}
		h := run(t, coordinator.Options{Workers: 4}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Second)
		h.trigger(events.ReasonChange, "corr-2", keyA)
		time.Sleep(time.Second)
		h.trigger(events.ReasonServiceState, "corr-3", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []call{
			{At: 0, Req: reconcilers.Request{Key: keyA, Attempt: 1, CorrelationID: "corr-1"}},
			{At: 5 * time.Second, Req: reconcilers.Request{Key: keyA, Attempt: 1, CorrelationID: "corr-3"}},
		}, f.Calls(), "after the reconcile, once more with the newest trigger's correlation ID")
	})
}

func TestKeyQueuedTwiceIsReconciledOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(_ context.Context, req reconcilers.Request) reconcilers.Result {
			if req.Key == keyB {
				time.Sleep(5 * time.Second) // keeps the only worker busy while keyA is queued
			}
			return reconcilers.Result{}
		}
		h := run(t, coordinator.Options{Workers: 1}, f)

		h.trigger(events.ReasonChange, "corr-b", keyB)
		h.trigger(events.ReasonChange, "corr-1", events.Key{Kind: kind, Name: "a"})
		h.trigger(events.ReasonChange, "corr-2", events.Key{Kind: kind, Namespace: "default", Name: "a"})
		h.c.Trigger(events.Key{Kind: kind, Name: "b"}) // keyB is in flight: it runs once more
		time.Sleep(time.Hour)
		synctest.Wait()

		calls := f.Calls()
		require.Len(t, calls, 3)
		assert.Equal(t, call{At: 0, Req: reconcilers.Request{Key: keyB, Attempt: 1, CorrelationID: "corr-b"}}, calls[0])
		assert.Equal(t, call{At: 5 * time.Second, Req: reconcilers.Request{Key: keyA, Attempt: 1, CorrelationID: "corr-2"}}, calls[1],
			"queued twice, under two spellings, reconciled once")
		assert.Equal(t, keyB, calls[2].Req.Key)
		assert.Equal(t, 5*time.Second, calls[2].At)
	})
}

// Also when every reconcile reports its resource deleted, so that a key's
// record and handle go whenever nothing is pending for it and the handles
// pass from key to key.
func TestNoKeyIsReconciledByTwoWorkersAtOnce(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		t.Run(fmt.Sprint("deleted=", deleted), func(t *testing.T) { testNoKeyIsReconciledByTwoWorkersAtOnce(t, deleted) })
	}
}

func testNoKeyIsReconciledByTwoWorkersAtOnce(t *testing.T, deleted bool) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			time.Sleep(time.Second)
			return reconcilers.Result{Deleted: deleted}
		}
		h := run(t, coordinator.Options{Workers: 2}, f)

		h.trigger(events.ReasonChange, "burst", keyA, keyB, keyC)
		for range 100 { // a trigger every 100ms for 10s, through both entry points
			time.Sleep(100 * time.Millisecond)
			h.trigger(events.ReasonChange, "burst", keyA, keyB, keyC)
			h.c.Trigger(keyA, events.Key{Kind: kind, Name: "b"})
		}
		time.Sleep(time.Hour)
		synctest.Wait()

		calls := f.SortedCalls()
		assert.Equal(t, []time.Duration{0, 0, time.Second}, []time.Duration{calls[0].At, calls[1].At, calls[2].At},
			"two workers run two different keys at once; the third waits")
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.EqualValues(t, 1, f.maxPerKey, "a key was reconciled by two workers at once")
		assert.Equal(t, 2, f.maxRunning, "different keys run concurrently, up to Workers")
		assert.Greater(t, len(calls), 10)
	})
}

func TestReconcileTimeoutCancelsContextAtExactly30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cancelledAfter time.Duration
		f := newFake(kind)
		f.reconcile = func(ctx context.Context, _ reconcilers.Request) reconcilers.Result {
			start := time.Now()
			<-ctx.Done()
			cancelledAfter = time.Since(start)
			return reconcilers.Result{Err: ctx.Err()}
		}
		h := run(t, coordinator.Options{Jitter: -1, MaxRetries: -1}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, 30*time.Second, cancelledAfter)
		assert.Len(t, f.Calls(), 1, "MaxRetries negative: no retries")
		assert.Equal(t, []events.ResourceFailed{{Meta: events.Meta{Time: h.at(30 * time.Second), CorrelationID: "corr-1"}, Key: keyA,
			Error: context.DeadlineExceeded.Error(), Attempt: 1, Duration: 30 * time.Second}}, eventsOf[events.ResourceFailed](h))
	})
}

func TestPanicIsRecoveredCountedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			if calls.Add(1) == 1 {
				panic("kaboom")
			}
			return reconcilers.Result{}
		}
		h := run(t, exact, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []try{{0, 1}, {time.Second, 2}}, tries(f.Calls()))
		assert.EqualValues(t, 1, h.c.Panics())
		failed := eventsOf[events.ResourceFailed](h)
		require.Len(t, failed, 1)
		assert.Equal(t, `reconciler of kind "MCPServer" panicked: kaboom`, failed[0].Error)
		assert.Equal(t, h.at(time.Second), failed[0].NextRetry)
		assert.Equal(t, []events.ResourceSynced{{Meta: events.Meta{Time: h.at(time.Second), CorrelationID: "corr-1"}, Key: keyA, Attempt: 2}},
			eventsOf[events.ResourceSynced](h))
	})
}

func TestRuntimeTriggersDuringBackoffDoNotBypassIt(t *testing.T) {
	for _, reason := range []events.Reason{events.ReasonServiceState, events.ReasonRetry, events.ReasonResync} {
		t.Run(string(reason), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(kind)
				f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
					time.Sleep(250 * time.Millisecond) // runtime triggers arrive during reconciles too
					return reconcilers.Result{Err: errBoom}
				}
				h := run(t, exact, f)

				h.trigger(events.ReasonChange, "corr-1", keyA)
				for range 300 { // a crash-looping service: a runtime trigger every 100ms for 30s
					time.Sleep(100 * time.Millisecond)
					h.trigger(reason, "crash", keyA)
				}
				time.Sleep(time.Hour)
				synctest.Wait()

				// Each attempt takes 250ms; the next starts its backoff later.
				ms := time.Millisecond
				assert.Equal(t, []try{{0, 1}, {1250 * ms, 2}, {3500 * ms, 3}, {7750 * ms, 4}, {16000 * ms, 5}, {32250 * ms, 6}},
					tries(f.Calls()))
				for i, e := range eventsOf[events.ResourceFailed](h) {
					assert.Equal(t, "corr-1", e.CorrelationID, "retries keep the chain of the trigger that started them")
					if i < 5 {
						assert.Equal(t, h.at(f.Calls()[i+1].At), e.NextRetry, "NextRetry is exactly when the retry ran")
					}
				}
			})
		})
	}
}

func TestJitteredRetryIsAnnouncedExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = failing
		h := run(t, coordinator.Options{Jitter: 0.5, Rand: func() float64 { return 0.5 }, MaxRetries: 2}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		ms := time.Millisecond
		assert.Equal(t, []try{{0, 1}, {1250 * ms, 2}, {3750 * ms, 3}}, tries(f.Calls()), "1s and 2s, each stretched by 0.5·0.5")
		var next []time.Time
		for _, e := range eventsOf[events.ResourceFailed](h) {
			next = append(next, e.NextRetry)
		}
		assert.Equal(t, []time.Time{h.at(1250 * ms), h.at(3750 * ms), {}}, next)
	})
}

func TestRetryAtIsHonouredExactlyAndOutlastsMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The dependency's own schedule: not before 10s, then 40s, then 5s
		// (already past by then), each measured from the bubble's start,
		// and far beyond BackoffMax once.
		start := time.Now()
		wants := []time.Duration{10 * time.Second, 40 * time.Second, 5 * time.Second, 2 * time.Hour, time.Second}
		var calls atomic.Int32
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			n := int(calls.Add(1))
			if n > len(wants) {
				return reconcilers.Result{} // the dependency is back
			}
			return reconcilers.Result{Err: reconcilers.RetryAt(errBoom, start.Add(wants[n-1]))}
		}
		// A jittered backoff: the retry times must not depend on it.
		h := run(t, coordinator.Options{Jitter: 0.5, Rand: func() float64 { return 0.9 }, MaxRetries: 4, BackoffMax: time.Minute}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		for range 100 { // runtime triggers do not bypass the retry time
			time.Sleep(time.Second)
			h.trigger(events.ReasonServiceState, "crash", keyA)
		}
		time.Sleep(24 * time.Hour)
		synctest.Wait()

		assert.Equal(t, []try{{0, 1}, {10 * time.Second, 2}, {40 * time.Second, 3}, {40 * time.Second, 4}, {2 * time.Hour, 5}, {2 * time.Hour, 6}}, tries(f.Calls()),
			"each retry at the time its error named, a past one at once, one past BackoffMax all the same, and beyond MaxRetries (4)")
		var next []time.Time
		for _, e := range eventsOf[events.ResourceFailed](h) {
			next = append(next, e.NextRetry)
			assert.Equal(t, "boom", e.Error)
		}
		assert.Equal(t, []time.Time{h.at(10 * time.Second), h.at(40 * time.Second), h.at(40 * time.Second), h.at(2 * time.Hour), h.at(2 * time.Hour)}, next)
		require.Len(t, eventsOf[events.ResourceSynced](h), 1, "it succeeds once the dependency is back")
	})
}

func TestRetryAtOfAPermanentErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			return reconcilers.Result{Err: reconcilers.RetryAt(reconcilers.Permanent(errBoom), start.Add(time.Second))}
		}
		h := run(t, exact, f)
		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, f.Calls(), 1)
		failed := eventsOf[events.ResourceFailed](h)
		require.Len(t, failed, 1)
		assert.True(t, failed[0].Permanent)
		assert.False(t, failed[0].WillRetry())
	})
}

func TestRequeueAfterIsHonouredExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			if calls.Add(1) == 1 {
				return reconcilers.Result{RequeueAfter: 7 * time.Second}
			}
			return reconcilers.Result{}
		}
		h := run(t, exact, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []try{{0, 1}, {7 * time.Second, 1}}, tries(f.Calls()))
		synced := eventsOf[events.ResourceSynced](h)
		require.Len(t, synced, 2)
		assert.Equal(t, 7*time.Second, synced[0].RequeueAfter)
		assert.Equal(t, "corr-1", synced[1].CorrelationID)
	})
}

func TestResyncReconcilesListedKeysEveryPeriodAndNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) {
			return []events.Key{keyA, {Kind: kind, Name: "b"}, orphan}, nil // orphan runs but is not declared
		}
		run(t, coordinator.Options{}, f) // default period 10m

		time.Sleep(time.Hour)
		synctest.Wait()

		var want []call
		var wantLists []time.Duration
		for pass := 1; pass <= 6; pass++ {
			at := time.Duration(pass) * 10 * time.Minute
			wantLists = append(wantLists, at)
			for _, k := range []events.Key{keyA, keyB, orphan} {
				want = append(want, call{At: at, Req: reconcilers.Request{Key: k, Attempt: 1}})
			}
		}
		calls := f.SortedCalls()
		for i := range calls {
			assert.NotEmpty(t, calls[i].Req.CorrelationID)
			calls[i].Req.CorrelationID = ""
		}
		assert.Equal(t, want, calls, "one pass of every listed key at each 10m mark, orphans included; no other reconcile")
		assert.Equal(t, wantLists, f.Lists())
	})
}

func TestResyncIsPacedAndRequestsDuringAPassCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		listed := []events.Key{events.NewKey(kind, "", "k1"), events.NewKey(kind, "", "k2"), events.NewKey(kind, "", "k3"), events.NewKey(kind, "", "k4")}
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return listed, nil }
		h := run(t, coordinator.Options{Workers: 4, ResyncPeriod: -1, ResyncQPS: 1}, f)

		h.c.Resync()
		time.Sleep(500 * time.Millisecond)
		h.trigger(events.ReasonChange, "change", keyA) // not starved by the pass
		time.Sleep(time.Second)
		for range 3 {
			h.c.Resync() // during the pass: at most one more pass
		}
		time.Sleep(time.Hour)
		synctest.Wait()

		s := time.Second
		var got []time.Duration
		var gotKeys []events.Key
		for _, c := range f.Calls() {
			got = append(got, c.At)
			gotKeys = append(gotKeys, c.Req.Key)
		}
		assert.Equal(t, []time.Duration{0, 500 * time.Millisecond, 1 * s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s}, got,
			"one key per second; the change goes ahead at once; the second pass follows the first")
		assert.Equal(t, []events.Key{listed[0], keyA, listed[1], listed[2], listed[3], listed[0], listed[1], listed[2], listed[3]}, gotKeys)
		assert.Equal(t, []time.Duration{0, 3 * s}, f.Lists(), "three requests during a pass make one more pass")
	})
}

func TestResyncTickAndRequestDuringAPassMakeOneMorePass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyA, keyB, keyC, orphan}, nil }
		h := run(t, coordinator.Options{ResyncPeriod: 10 * time.Second, ResyncQPS: 1}, f)

		time.Sleep(8 * time.Second)
		h.c.Resync() // a pass from 8s to 11s, one key a second
		time.Sleep(time.Second)
		h.c.Resync() // during it, as is the tick at 10s
		time.Sleep(12 * time.Second)
		synctest.Wait()

		assert.Equal(t, []time.Duration{8 * time.Second, 11 * time.Second, 20 * time.Second}, f.Lists(),
			"the request and the tick during the first pass make one more pass; the next is the tick at 20s")
	})
}

// gatedLogger blocks the goroutine that logs msg until the gate is
// opened: a way to hold the coordinator's subscription while triggers pile
// up in its mailbox.
type gatedLogger struct {
	slog.Handler
	msg  string
	gate chan struct{}
}

func (g gatedLogger) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == g.msg {
		<-g.gate
	}
	return g.Handler.Handle(ctx, r)
}

func (g gatedLogger) Enabled(context.Context, slog.Level) bool { return true }

func (g gatedLogger) WithAttrs(attrs []slog.Attr) slog.Handler {
	return gatedLogger{g.Handler.WithAttrs(attrs), g.msg, g.gate}
}

func TestPendingTriggersOfDifferentReasonsKeepTheirReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var broken atomic.Bool
		broken.Store(true)
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			if broken.Load() {
				return reconcilers.Result{Err: errBoom}
			}
			return reconcilers.Result{}
		}
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{orphan}, nil }
		other := newFake("Other")
		gate := make(chan struct{})
		logger := slog.New(gatedLogger{Handler: slog.DiscardHandler, msg: "trigger of a disabled kind ignored", gate: gate})
		h := run(t, coordinator.Options{Jitter: -1, ResyncPeriod: -1, Logger: logger}, f, other)
		require.NoError(t, h.c.SetKindEnabled("Other", false))

		h.trigger(events.ReasonChange, "corr-1", keyA) // fails at 0s; next retry due at 1s
		broken.Store(false)
		// Hold the subscription, and queue up behind it: the initial
		// listing's end, a change of keyA (which waits for a retry) and a
		// service-state trigger of keyB.
		h.trigger(events.ReasonChange, "held", events.NewKey("Other", "", "x"))
		h.trigger(events.ReasonIndexSynced, "synced")
		h.trigger(events.ReasonChange, "corr-2", keyA)
		h.trigger(events.ReasonServiceState, "crash", keyB)
		close(gate)
		synctest.Wait()

		assert.Equal(t, []time.Duration{0}, f.Lists(), "the index-synced trigger still starts a pass")
		calls := f.SortedCalls()
		require.Len(t, calls, 4, "keyA twice, keyB and the orphan; no retry at 1s")
		assert.Equal(t, reconcilers.Request{Key: keyA, Attempt: 1, CorrelationID: "corr-2"}, calls[1].Req,
			"the change still resets keyA's backoff: it runs now, not at its retry")
	})
}

func TestIndexSyncedTriggerStartsResyncPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyA, orphan}, nil }
		h := run(t, coordinator.Options{ResyncPeriod: -1}, f)

		h.trigger(events.ReasonChange, "empty") // an empty change trigger starts no pass
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, f.Lists())

		h.trigger(events.ReasonIndexSynced, "synced")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, []time.Duration{time.Minute}, f.Lists())
		calls := f.SortedCalls()
		require.Len(t, calls, 2)
		assert.Equal(t, []events.Key{keyA, orphan}, []events.Key{calls[0].Req.Key, calls[1].Req.Key})
		assert.Equal(t, []time.Duration{time.Minute, time.Minute}, []time.Duration{calls[0].At, calls[1].At})
	})
}

func TestTheIndexSyncedPassSkipsTheKeysOfItsTriggerAndReconcilesTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyA, keyB, orphan}, nil }
		h := run(t, coordinator.Options{ResyncPeriod: -1}, f)

		h.trigger(events.ReasonIndexSynced, "synced", keyA, keyB)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0}, f.Lists())
		calls := f.SortedCalls()
		require.Len(t, calls, 3, "keyA and keyB once each, from the trigger; the orphan from the pass")
		assert.Equal(t, []events.Key{keyA, keyB, orphan}, []events.Key{calls[0].Req.Key, calls[1].Req.Key, calls[2].Req.Key})
		assert.Equal(t, "synced", calls[0].Req.CorrelationID)

		// The skip is for that pass alone: the next one reconciles all.
		h.c.Resync()
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, f.Calls(), 6)
	})
}

func TestResyncLogsListErrorsAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broken := newFake("Broken")
		broken.list = func(context.Context) ([]events.Key, error) { return nil, errors.New("disk on fire") }
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyA}, nil }
		logs := &logtest.Buffer{}
		run(t, coordinator.Options{ResyncPeriod: time.Minute, Logger: debugLogger(logs)}, broken, f)

		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Len(t, f.Calls(), 1, "the other kind is still resynced")
		assert.Contains(t, logs.String(), `kind=Broken error="disk on fire"`)
	})
}

func TestUnknownKindFailsPermanently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		h := run(t, exact, f)
		workflow := events.NewKey("Workflow", "", "deploy")

		h.trigger(events.ReasonChange, "corr-1", workflow)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Equal(t, []events.Event{events.ResourceFailed{Meta: events.Meta{Time: h.at(0), CorrelationID: "corr-1"}, Key: workflow,
			Error: `no reconciler registered for kind "Workflow"`, Attempt: 1, Permanent: true}}, h.events(),
			"no ReconciliationStarted, no retries")
		assert.Zero(t, h.c.Records(), "and no record kept for it")
	})
}

func TestDisabledKindIsIgnoredAndReenablingEnqueuesList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyA, orphan}, nil }
		h := run(t, coordinator.Options{ResyncPeriod: -1}, f)

		assert.ErrorContains(t, h.c.SetKindEnabled("Workflow", false), `"Workflow"`)
		assert.False(t, h.c.KindEnabled("Workflow"))
		assert.True(t, h.c.KindEnabled(kind))

		require.NoError(t, h.c.SetKindEnabled(kind, false))
		assert.False(t, h.c.KindEnabled(kind))
		h.trigger(events.ReasonChange, "ignored", keyA)
		h.c.Trigger(keyB)
		h.c.Resync()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, f.Calls(), "triggers of a disabled kind are ignored")
		assert.Empty(t, f.Lists(), "a resync skips disabled kinds")

		require.NoError(t, h.c.SetKindEnabled(kind, true))
		require.NoError(t, h.c.SetKindEnabled(kind, true), "enabling an enabled kind is a no-op")
		assert.True(t, h.c.KindEnabled(kind))
		synctest.Wait()
		calls := f.SortedCalls()
		require.Len(t, calls, 2)
		assert.Equal(t, []events.Key{keyA, orphan}, []events.Key{calls[0].Req.Key, calls[1].Req.Key})
		assert.Equal(t, []time.Duration{time.Minute, time.Minute}, []time.Duration{calls[0].At, calls[1].At})
		assert.Equal(t, []time.Duration{time.Minute}, f.Lists(), "re-enabling lists once")
	})
}

func TestDisablingAKindDropsItsPendingRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = failing
		h := run(t, exact, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(2 * time.Second) // attempts at 0s and 1s; the next is due at 3s
		require.NoError(t, h.c.SetKindEnabled(kind, false))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, []try{{0, 1}, {time.Second, 2}}, tries(f.Calls()))
	})
}

func TestChangeOrManualTriggerResetsBackoff(t *testing.T) {
	for name, reset := range map[string]func(h *harness){
		"manual Trigger": func(h *harness) { h.c.Trigger(keyA) },
		"change":         func(h *harness) { h.trigger(events.ReasonChange, "corr-2", keyA) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var broken atomic.Bool
				broken.Store(true)
				f := newFake(kind)
				f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
					if broken.Load() {
						return reconcilers.Result{Err: errBoom}
					}
					return reconcilers.Result{}
				}
				h := run(t, exact, f)

				h.trigger(events.ReasonChange, "corr-1", keyA) // fails at 0s, 1s, 3s; next retry due at 7s
				time.Sleep(6500 * time.Millisecond)
				// Fails at 6.5s as attempt 1; its retry, due at 7.5s, waits
				// behind the void one at 7s, then runs as attempt 2, then
				// attempt 3 at 9.5s; the next is due at 13.5s.
				reset(h)
				time.Sleep(3500 * time.Millisecond)
				broken.Store(false)
				reset(h) // succeeds at 10s; the retry due at 13.5s is void
				time.Sleep(time.Hour)
				synctest.Wait()

				s, ms := time.Second, time.Millisecond
				assert.Equal(t, []try{{0, 1}, {1 * s, 2}, {3 * s, 3}, {6500 * ms, 1}, {7500 * ms, 2}, {9500 * ms, 3}, {10 * s, 1}}, tries(f.Calls()))
				calls := f.Calls()
				assert.NotEqual(t, "corr-1", calls[3].Req.CorrelationID, "the reset starts a new chain")
				assert.Equal(t, calls[3].Req.CorrelationID, calls[4].Req.CorrelationID, "its retries continue it")
			})
		})
	}
}

func TestStopCancelsInFlightReconcilesWithoutReportingOrRetrying(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sawErr error
		f := newFake(kind)
		f.reconcile = func(ctx context.Context, _ reconcilers.Request) reconcilers.Result {
			<-ctx.Done()
			sawErr = ctx.Err()
			return reconcilers.Result{Err: ctx.Err()}
		}
		h := run(t, coordinator.Options{Workers: 1, Jitter: -1}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		h.trigger(events.ReasonChange, "corr-2", keyB) // waits for the only worker
		time.Sleep(2 * time.Second)
		h.stop() // returns only once the in-flight reconcile has returned
		assert.ErrorIs(t, sawErr, context.Canceled)
		synctest.Wait()
		assert.Len(t, f.Calls(), 1, "what is still queued at shutdown is not reconciled")
		assert.Equal(t, []events.Event{events.ReconciliationStarted{Meta: events.Meta{Time: h.at(0), CorrelationID: "corr-1"}, Key: keyA, Attempt: 1}},
			h.events(), "interrupted by shutdown: not a failure, so neither reported nor retried")
	})
}

func TestActiveWorkersAndBusySince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(_ context.Context, req reconcilers.Request) reconcilers.Result {
			time.Sleep(10 * time.Second)
			return reconcilers.Result{}
		}
		h := run(t, coordinator.Options{Workers: 2}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		assert.Equal(t, 1, h.c.ActiveWorkers())
		_, busy := h.c.BusySince()
		assert.False(t, busy, "a free worker remains")

		time.Sleep(3 * time.Second)
		h.trigger(events.ReasonChange, "corr-2", keyB)
		time.Sleep(time.Second)
		assert.Equal(t, 2, h.c.ActiveWorkers())
		since, busy := h.c.BusySince()
		assert.True(t, busy)
		assert.Equal(t, h.start.Add(3*time.Second).UnixNano(), since.UnixNano(), "no worker free since the second reconcile began")

		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Zero(t, h.c.ActiveWorkers())
		_, busy = h.c.BusySince()
		assert.False(t, busy)
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	b := bus.New(bus.Options{Logger: discard})
	defer b.Close()
	reg, err := reconcilers.NewRegistry()
	require.NoError(t, err)
	for name, opts := range map[string]coordinator.Options{
		"negative workers": {Workers: -1},
		"negative timeout": {ReconcileTimeout: -time.Second},
		"max below base":   {BackoffBase: time.Minute, BackoffMax: time.Second},
		"negative QPS":     {ResyncQPS: -1},
		"negative backoff": {BackoffBase: -time.Second},
	} {
		_, err := coordinator.New(b, reg, opts)
		assert.Error(t, err, name)
	}
	_, err = coordinator.New(nil, reg, coordinator.Options{})
	assert.Error(t, err)
	c, err := coordinator.New(b, reg, coordinator.Options{})
	require.NoError(t, err)
	assert.Equal(t, "coordinator", c.Name())
}

// countingMetrics is a workqueue.MetricsProvider that counts adds and
// retries and ignores the rest.
type countingMetrics struct {
	names         sync.Map
	adds, retries atomic.Int64
}

type counter struct{ n *atomic.Int64 }

func (c counter) Inc() { c.n.Add(1) }

type ignored struct{}

func (ignored) Inc()            {}
func (ignored) Dec()            {}
func (ignored) Set(float64)     {}
func (ignored) Observe(float64) {}

func (m *countingMetrics) NewDepthMetric(string) workqueue.GaugeMetric       { return ignored{} }
func (m *countingMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return ignored{} }
func (m *countingMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return ignored{}
}
func (m *countingMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return ignored{}
}
func (m *countingMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return ignored{}
}
func (m *countingMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	m.names.Store(name, true)
	return counter{&m.adds}
}
func (m *countingMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	m.names.Store(name, true)
	return counter{&m.retries}
}

func TestWorkqueueMetricsCountAddsAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		metrics := &countingMetrics{}
		f := newFake(kind)
		f.reconcile = failing
		h := run(t, coordinator.Options{Jitter: -1, MaxRetries: 2, MetricsProvider: metrics}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()

		assert.Len(t, f.Calls(), 3)
		assert.EqualValues(t, 2, metrics.retries.Load(), "each retry goes through the rate-limited add path")
		assert.EqualValues(t, 3, metrics.adds.Load())
		_, named := metrics.names.Load("coordinator")
		assert.True(t, named, "the queue's metrics are named after the component")
	})
}

var permanent = func(context.Context, reconcilers.Request) reconcilers.Result {
	return reconcilers.Result{Err: reconcilers.Permanent(errors.New("invalid definition"))}
}

func TestFailedKeyWaitsForAChangeManualTriggerOrResync(t *testing.T) {
	failures := []struct {
		name      string
		reconcile func(context.Context, reconcilers.Request) reconcilers.Result
		calls     int
	}{
		{"retries exhausted", failing, 6},
	}
	wakers := []struct {
		reason events.Reason
		wake   func(h *harness, listed *[]events.Key)
	}{
		{events.ReasonChange, func(h *harness, _ *[]events.Key) { h.trigger(events.ReasonChange, "wake", keyA) }},
		{events.ReasonRefractoryEnd, func(h *harness, _ *[]events.Key) { h.trigger(events.ReasonRefractoryEnd, "wake", keyA) }},
		{events.ReasonIndexSynced, func(h *harness, _ *[]events.Key) { h.trigger(events.ReasonIndexSynced, "wake", keyA) }},
		{events.ReasonManual, func(h *harness, _ *[]events.Key) { h.c.Trigger(keyA) }},
		{events.ReasonResync, func(h *harness, listed *[]events.Key) { *listed = []events.Key{keyA}; h.c.Resync() }},
	}
	for _, failure := range failures {
		for _, waker := range wakers {
			t.Run(failure.name+"/"+string(waker.reason), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var listed []events.Key // nothing until the resync waker lists keyA
					f := newFake(kind)
					f.reconcile = failure.reconcile
					f.list = func(context.Context) ([]events.Key, error) { return listed, nil }
					h := run(t, coordinator.Options{Jitter: -1, ResyncPeriod: -1}, f)

					h.trigger(events.ReasonChange, "corr-1", keyA)
					time.Sleep(time.Minute)
					require.Len(t, f.Calls(), failure.calls, "failed for good")
					require.False(t, eventsOf[events.ResourceFailed](h)[failure.calls-1].WillRetry())

					for range 10 { // a crash-looping service, and stray retry triggers
						time.Sleep(500 * time.Millisecond)
						h.trigger(events.ReasonServiceState, "crash", keyA)
						h.trigger(events.ReasonRetry, "retry", keyA)
					}
					time.Sleep(time.Minute)
					synctest.Wait()
					assert.Len(t, f.Calls(), failure.calls, "a Failed key stays Failed through service-state and retry triggers")

					waker.wake(h, &listed)
					synctest.Wait()
					calls := f.Calls()
					require.Greater(t, len(calls), failure.calls, "the %s reconciles the Failed key", waker.reason)
					assert.Equal(t, try{2*time.Minute + 5*time.Second, 1}, tries(calls)[failure.calls], "at once, afresh from attempt 1")
				})
			})
		}
	}
}

func TestAPermanentErrorIsNotRetriedButRuntimeTriggersStillReachIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = permanent
		h := run(t, coordinator.Options{Jitter: -1, ResyncPeriod: -1}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Len(t, f.Calls(), 1, "a permanent error is not retried")

		// The definition is broken, but what runs keeps changing: a crash of
		// the last good server must still be reconciled.
		h.trigger(events.ReasonServiceState, "crash", keyA)
		synctest.Wait()
		calls := f.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, try{time.Hour, 1}, tries(calls)[1])
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, f.Calls(), 2, "and is still not retried")
	})
}

func TestFailedTombstonesDoNotOutliveTheirKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fixed atomic.Bool
		f := newFake(kind)
		f.reconcile = func(ctx context.Context, req reconcilers.Request) reconcilers.Result {
			if fixed.Load() {
				return reconcilers.Result{Deleted: true}
			}
			return failing(ctx, req)
		}
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyC}, nil }
		h := run(t, coordinator.Options{ResyncPeriod: -1, MaxRetries: -1}, f) // fails for good at once

		h.trigger(events.ReasonChange, "corr-1", keyA, keyB, keyC)
		assert.Equal(t, 3, h.c.TrackedKeys(), "each Failed key keeps a tombstone")

		fixed.Store(true)
		h.trigger(events.ReasonChange, "corr-2", keyA)
		assert.Equal(t, 2, h.c.TrackedKeys(), "a successful delete clears the tombstone")

		fixed.Store(false)
		h.c.Resync() // List reports only keyC, which fails again: keyB is gone
		synctest.Wait()
		assert.Equal(t, 1, h.c.TrackedKeys(), "a resync that no longer lists a Failed key clears its tombstone")

		h.trigger(events.ReasonChange, "corr-3", keyA)
		require.Equal(t, 2, h.c.TrackedKeys())
		require.NoError(t, h.c.SetKindEnabled(kind, false))
		h.c.Resync()
		synctest.Wait()
		assert.Zero(t, h.c.TrackedKeys(), "a resync clears the tombstones of disabled kinds")
		assert.Len(t, f.Calls(), 6)
	})
}

// observed is one ObserveReconcile call.
type observed struct {
	Kind, Result string
	Took         time.Duration
}

// recordingObserver is a coordinator.Observer that keeps every call.
type recordingObserver struct {
	mu    sync.Mutex
	calls []observed
}

func (o *recordingObserver) ObserveReconcile(kind, result string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observed{kind, result, took})
}

func (o *recordingObserver) Calls() []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

func TestObserverSeesEveryFinishedReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		f := newFake(kind)
		f.reconcile = func(ctx context.Context, req reconcilers.Request) reconcilers.Result {
			n := calls.Add(1)
			if n == 6 { // runs until the coordinator stops
				<-ctx.Done()
				return reconcilers.Result{Err: ctx.Err()}
			}
			time.Sleep(time.Duration(n) * time.Second)
			switch n {
			case 1:
				return reconcilers.Result{RequeueAfter: time.Minute}
			case 2:
				return reconcilers.Result{Err: errBoom}
			case 3:
				panic("kaboom")
			case 4:
				return reconcilers.Result{Err: reconcilers.Permanent(errBoom)}
			}
			return reconcilers.Result{}
		}
		obs := &recordingObserver{}
		h := run(t, coordinator.Options{Workers: 1, Jitter: -1, ResyncPeriod: -1, Observer: obs}, f)

		// One worker. Reconcile 1 (keyA, 1s) asks for a requeue in 1m; 2
		// (keyB, 2s) fails, its retry 3 (3s) panics, and its retry 4 (4s)
		// fails for good.
		h.trigger(events.ReasonChange, "corr-1", keyA)
		h.trigger(events.ReasonChange, "corr-2", keyB)
		time.Sleep(time.Minute)
		h.trigger(events.ReasonChange, "corr-3", events.NewKey("Workflow", "", "no-reconciler")) // fails without running
		time.Sleep(time.Minute)                                                                  // 5: keyA's requeue (5s) succeeds
		h.trigger(events.ReasonChange, "corr-4", keyC)                                           // 6: interrupted by shutdown
		time.Sleep(time.Second)
		h.stop()

		s := time.Second
		assert.Equal(t, []observed{
			{kind, "requeue_after", 1 * s},
			{kind, "error", 2 * s},
			{kind, "error", 3 * s},
			{kind, "error", 4 * s},
			{"Workflow", "error", 0},
			{kind, "success", 5 * s},
		}, obs.Calls())
		assert.EqualValues(t, 1, h.c.Panics())
	})
}

func TestErrorsAreRedactedBeforeTheyTravel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(_ context.Context, req reconcilers.Request) reconcilers.Result {
			if req.Key == keyA {
				return reconcilers.Result{Err: reconcilers.Permanent(errors.New("pull https://admin:hunter2@registry.local/x: token=s3cr3t refused"))}
			}
			panic("login failed with password=hunter2")
		}
		f.list = func(context.Context) ([]events.Key, error) {
			return nil, errors.New("read /home/alice/.config/musterd/token.yaml: Authorization: Bearer s3cr3t")
		}
		logs := &logtest.Buffer{}
		h := run(t, coordinator.Options{Jitter: -1, MaxRetries: -1, ResyncPeriod: -1, Logger: debugLogger(logs)}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA, keyB)
		h.c.Resync()
		synctest.Wait()

		failed := eventsOf[events.ResourceFailed](h)
		require.Len(t, failed, 2)
		slices.SortFunc(failed, func(a, b events.ResourceFailed) int { return strings.Compare(a.Key.Name, b.Key.Name) })
		assert.Equal(t, "pull https://[redacted]@registry.local/x: token=[redacted] refused", failed[0].Error)
		assert.Equal(t, `reconciler of kind "MCPServer" panicked: login failed with password=[redacted]`, failed[1].Error)
		out := logs.String()
		assert.Contains(t, out, "reconciler panicked")
		assert.Contains(t, out, "resync: listing failed")
		for _, secret := range []string{"hunter2", "s3cr3t", "alice"} {
			assert.NotContains(t, out, secret, "the log leaks a secret")
		}
	})
}

func TestChainsTheCoordinatorStartsTakeIDsFromNewCorrelationID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		minted := 0
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return []events.Key{keyA}, nil }
		h := run(t, coordinator.Options{Workers: 1, ResyncPeriod: -1, NewCorrelationID: func() string {
			minted++ // only the coordinator's goroutines call it, one at a time here
			return fmt.Sprintf("id-%d", minted)
		}}, f)

		h.c.Trigger(keyB) // a manual trigger starts a chain
		synctest.Wait()
		h.c.Resync() // so does a resync pass
		synctest.Wait()
		// A trigger that carries no ID, such as a hand-written one.
		bus.Publish(h.bus, events.ReconciliationTriggered{Reason: events.ReasonChange,
			Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: keyA})})
		synctest.Wait()

		var ids []string
		for _, c := range f.Calls() {
			ids = append(ids, c.Req.Key.Name+":"+c.Req.CorrelationID)
		}
		assert.Equal(t, []string{"b:id-1", "a:id-2", "a:id-3"}, ids)
	})
}

// ResourceSynced names the hash Options.Hash gave as the reconcile began,
// before Reconcile read the definition: a hash that changes during the
// reconcile is not claimed by it.
func TestResourceSyncedNamesTheHashReadAsTheReconcileBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			hash = "sha256:first"
		)
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			mu.Lock()
			hash = "sha256:edited meanwhile"
			mu.Unlock()
			return reconcilers.Result{}
		}
		h := run(t, coordinator.Options{Hash: func(k events.Key) string {
			assert.Equal(t, keyA, k)
			mu.Lock()
			defer mu.Unlock()
			return hash
		}}, f)
		h.trigger(events.ReasonChange, "corr-1", keyA)
		synced := eventsOf[events.ResourceSynced](h)
		require.Len(t, synced, 1)
		assert.Equal(t, "sha256:first", synced[0].Hash)
	})
}

// A key's record, and so its handle, is kept while its resource exists, so
// that its next trigger finds it, and goes once a reconcile reports the
// resource deleted: memory follows the resources, not the triggers.
func TestRecordsFollowTheResourcesThatExist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var deleted atomic.Bool
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			return reconcilers.Result{Deleted: deleted.Load()}
		}
		h := run(t, coordinator.Options{ResyncPeriod: -1}, f)
		h.trigger(events.ReasonChange, "corr-1", keyA, keyB)
		assert.Zero(t, h.c.TrackedKeys(), "nothing left to do")
		assert.Equal(t, 2, h.c.Records(), "both resources exist")

		deleted.Store(true)
		h.trigger(events.ReasonChange, "corr-2", keyA)
		assert.Equal(t, 1, h.c.Records(), "a reconcile that reports the resource deleted drops its record")
		h.trigger(events.ReasonChange, "corr-3", keyA, keyB)
		assert.Zero(t, h.c.Records())
		assert.Len(t, f.Calls(), 5)
	})
}
