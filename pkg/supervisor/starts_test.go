package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

const starting = v1alpha1.MCPServerStateStarting

// marker makes an argument unique to one test's servers, to find their
// processes in /proc whatever the supervisor says (-tools takes it as a
// tool name).
func marker(t *testing.T) string {
	return fmt.Sprintf("marker-%s-%d", filepath.Base(t.Name()), time.Now().UnixNano())
}

// launched reports whether o may be the change of a start that began:
// Starting with its LastAttempt set. (The Starting of a start asked for
// carries the LastAttempt of the start before, if any: count distinct
// times.)
func launched(o supervisor.Observed) bool { return o.State == starting && !o.LastAttempt.IsZero() }

// Ensure asks for a start and returns: the start runs on the supervisor's
// goroutines, and ten slow starts run side by side. Every start begins
// before any ends, which two at a time (the coordinator's workers, before)
// could never show.
func TestEnsureReturnsAtOnceAndSlowStartsRunSideBySide(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	const servers = 10
	var keys []events.Key
	for i := range servers {
		k := key(fmt.Sprintf("slow%02d", i))
		keys = append(keys, k)
		obs, err := h.sup.Ensure(t.Context(), k, fake("-slow-start", "2s"))
		require.NoError(t, err)
		assert.Equal(t, starting, obs.State, "asked for, not waited for")
		assert.Zero(t, obs.PID)
	}
	for _, k := range keys {
		assert.Equal(t, running, h.settle(t, k).State)
	}

	// The order of the changes, across servers, as OnChange made them.
	h.rec.mu.Lock()
	order := append([]change(nil), h.rec.order...)
	h.rec.mu.Unlock()
	firstRunning, lastLaunch := -1, -1
	for i, c := range order {
		if c.obs.State == running && firstRunning < 0 {
			firstRunning = i
		}
		if launched(c.obs) {
			lastLaunch = i
		}
	}
	require.Positive(t, firstRunning)
	assert.Less(t, lastLaunch, firstRunning, "all %d starts began before the first ended: %v", servers, order)
}

// No two operations on one server ever overlap: each mcp-fake takes an
// exclusive lock for its life, and exits 5 if another of its server holds
// it. Specs flip-flop and Stops come between, as fast as callers can.
func TestNeverTwoOperationsOnOneServerAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{StopGrace: 2 * time.Second})
	k := key("exclusive")
	lock := filepath.Join(t.TempDir(), "lock")
	spec := func(tool string) v1alpha1.MCPServerSpec {
		return fake("-exclusive", lock, "-slow-start", "20ms", "-tools", tool)
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 30 {
				if g == 2 && i%5 == 0 {
					assert.NoError(t, h.sup.Stop(t.Context(), k))
					continue
				}
				_, err := h.sup.Ensure(t.Context(), k, spec(fmt.Sprintf("t%d", i%3)))
				assert.NoError(t, err)
				if i%4 == 0 {
					_, _, err := h.sup.Wait(t.Context(), k)
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	final := h.ensure(t, k, spec("final"))
	assert.Equal(t, running, final.State)
	assert.Equal(t, []string{"final"}, final.Tools)
	for _, o := range h.rec.of(k) {
		assert.NotEqual(t, failed, o.State, "no start failed, above all none for a lock held: %s", o.LastError)
	}
}

// A spec changed during a start cancels it, with no failure, and the new
// spec starts.
func TestASpecChangeDuringAStartCancelsItAndStartsTheNewSpec(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("respec-during-start")
	old := marker(t)
	hanging := fake("-hang-on-initialize", "-tools", old)
	hanging.Timeout = 300 // the most the CRD allows: only the change can end this start

	_, err := h.sup.Ensure(t.Context(), k, hanging)
	require.NoError(t, err)
	h.rec.waitFor(t, k, "the start began", launched)
	require.Eventually(t, func() bool { return len(processesWith(t, old)) == 1 }, deadline, 5*time.Millisecond)

	obs, err := h.sup.Ensure(t.Context(), k, fake("-tools", "fresh"))
	require.NoError(t, err)
	assert.Equal(t, starting, obs.State)
	obs = h.settle(t, k)
	assert.Equal(t, running, obs.State)
	assert.Equal(t, []string{"fresh"}, obs.Tools)
	assert.Zero(t, obs.ConsecutiveFailures, "a cancelled start is no failure")
	assert.Empty(t, obs.LastError)
	assert.Empty(t, processesWith(t, old), "the cancelled start left no process")
	for _, o := range h.rec.of(k) {
		assert.NotEqual(t, failed, o.State)
		assert.NotEqual(t, v1alpha1.MCPServerStateStopped, o.State, "no Stopped between the two specs")
	}
}

// Stop during a start wins, whether the start runs or waits for a slot: it
// returns with no process left, the server forgotten, and no start after.
func TestStopDuringAStartWinsAndLeavesNoProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{StartConcurrency: 1})
	mark := marker(t)
	hanging := fake("-hang-on-initialize", "-tools", mark)
	hanging.Timeout = 300
	running1, waiting := key("stop-running-start"), key("stop-waiting-start")

	_, err := h.sup.Ensure(t.Context(), running1, hanging)
	require.NoError(t, err)
	h.rec.waitFor(t, running1, "the start began", launched)
	_, err = h.sup.Ensure(t.Context(), waiting, hanging)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(processesWith(t, mark)) == 1 }, deadline, 5*time.Millisecond)

	for _, k := range []events.Key{waiting, running1} {
		require.NoError(t, h.sup.Stop(t.Context(), k))
		_, known := h.sup.Get(k)
		assert.False(t, known, k.Name)
	}
	assert.Empty(t, processesWith(t, mark), "Stop returned with no process left")
	for _, k := range []events.Key{waiting, running1} {
		h.rec.waitFor(t, k, "stopped", func(o supervisor.Observed) bool { return o.State == v1alpha1.MCPServerStateStopped })
		for _, o := range h.rec.of(k) {
			assert.NotEqual(t, failed, o.State, "a stop is no failure")
		}
		_, known, err := h.sup.Wait(t.Context(), k)
		require.NoError(t, err)
		assert.False(t, known, "nothing starts after the stop")
	}
	assert.Empty(t, processesWith(t, mark))
}

// The backoff cannot be bypassed: not by asking again, not by a caller that
// gives up, not by asking for another spec and back during its start.
func TestTheBackoffCannotBeBypassedDuringStarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: time.Hour}})
	k := key("no-bypass")
	broken := fake("-exit-at-once")
	first := h.ensure(t, k, broken)
	assert.Equal(t, failed, first.State)

	_, err := h.sup.Ensure(t.Context(), k, broken)
	_, backingOff := errors.AsType[*supervisor.RetryLaterError](err)
	require.True(t, backingOff, "got %v", err)

	mark := marker(t)
	hanging := fake("-hang-on-initialize", "-tools", mark)
	hanging.Timeout = 300
	_, err = h.sup.Ensure(t.Context(), k, hanging)
	require.NoError(t, err, "another spec is the user's fix: not held back")
	h.rec.waitFor(t, k, "the other start began", func(o supervisor.Observed) bool { return launched(o) && o.LastAttempt.After(first.LastAttempt) })
	_, err = h.sup.Ensure(t.Context(), k, broken)
	_, backingOff = errors.AsType[*supervisor.RetryLaterError](err)
	assert.True(t, backingOff, "back to the failed spec during the other's start: still backing off; got %v", err)
	obs, _ := h.sup.Get(k)
	assert.Equal(t, starting, obs.State, "the other spec's start goes on")
	require.Eventually(t, func() bool { return len(processesWith(t, mark)) == 1 }, deadline, 5*time.Millisecond)
	starts := map[time.Time]bool{}
	for _, o := range h.rec.of(k) {
		if launched(o) {
			starts[o.LastAttempt] = true
		}
	}
	assert.Len(t, starts, 2, "the failed spec once, the other once: nothing started the failed spec again")
}

// Shutdown during starts, some running and some waiting for a slot, leaves
// no process and no goroutine that could start one.
func TestShutdownDuringStartsLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	rec := &recorder{changes: map[events.Key][]supervisor.Observed{}}
	sup := supervisor.New(supervisor.Options{StartConcurrency: 3, OnChange: rec.onChange, Logger: slog.New(slog.DiscardHandler)})
	mark := marker(t)
	hanging := fake("-hang-on-initialize", "-tools", mark)
	hanging.Timeout = 300
	for i := range 6 {
		_, err := sup.Ensure(t.Context(), key(fmt.Sprintf("orphan%d", i)), hanging)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(processesWith(t, mark)) == 3 }, deadline, 5*time.Millisecond, "three start, three wait")

	require.NoError(t, sup.Shutdown(t.Context()))
	assert.Empty(t, processesWith(t, mark), "no process outlives Shutdown")
	assert.Empty(t, sup.Keys())
	_, err := sup.Ensure(t.Context(), key("late"), hanging)
	require.ErrorIs(t, err, supervisor.ErrShutdown)
	for i := range 6 {
		k := key(fmt.Sprintf("orphan%d", i))
		last := rec.of(k)[len(rec.of(k))-1]
		assert.Equal(t, v1alpha1.MCPServerStateStopped, last.State, "%s: the last change, made before Shutdown returned", k.Name)
	}
}

// A start bounded by the spec's timeout fails with that reason; one whose
// spec sets none is bounded by Options.StartTimeout, not by PingTimeout.
func TestAStartOutlivingItsTimeoutFailsSayingSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{StartTimeout: 700 * time.Millisecond, PingTimeout: time.Millisecond})
	spec := fake("-hang-on-initialize")
	spec.Timeout = 1
	obs := h.ensure(t, key("spec-timeout"), spec)
	assert.Equal(t, failed, obs.State)
	assert.Contains(t, obs.LastError, "did not answer initialize and tools/list within 1s")

	spec.Timeout = 0
	obs = h.ensure(t, key("option-timeout"), spec)
	assert.Equal(t, failed, obs.State)
	assert.Contains(t, obs.LastError, "did not answer initialize and tools/list within 700ms")

	slow := fake("-slow-start", "200ms")
	slow.Timeout = 0
	assert.Equal(t, running, h.ensure(t, key("slow-not-pinged"), slow).State, "PingTimeout does not bound a start")
}

// An Ensure made the moment a start failed (as the reconcile that its
// ServiceStateChanged brings is) finds the server backing off, not a start
// still under way: else nothing would bring it back when the backoff ends.
// The logger is slow, to widen the moment between the failure and the end
// of the goroutine that started the server; the caller spins on Ensure.
func TestAnEnsureTheMomentAStartFailedIsToldToRetryLater(t *testing.T) {
	t.Parallel()
	sup := supervisor.New(supervisor.Options{
		Logger:         slog.New(slowHandler{slog.DiscardHandler}),
		RestartBackoff: supervisor.Backoff{Base: time.Hour},
	})
	t.Cleanup(func() { require.NoError(t, sup.Shutdown(context.Background())) })
	k := key("failed-just-now")
	spec := fake("-exit-at-once")
	_, err := sup.Ensure(t.Context(), k, spec)
	require.NoError(t, err)
	stop := time.Now().Add(deadline)
	for time.Now().Before(stop) {
		obs, err := sup.Ensure(t.Context(), k, spec)
		if obs.State != failed {
			require.NoError(t, err)
			continue
		}
		_, backingOff := errors.AsType[*supervisor.RetryLaterError](err)
		assert.True(t, backingOff, "Failed, so backing off; got %v", err)
		return
	}
	t.Fatal("the start never failed")
}

// slowHandler takes 100ms over every log line.
type slowHandler struct{ slog.Handler }

func (slowHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h slowHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return slowHandler{h.Handler.WithAttrs(attrs)}
}

func (h slowHandler) WithGroup(name string) slog.Handler {
	return slowHandler{h.Handler.WithGroup(name)}
}

func (h slowHandler) Handle(ctx context.Context, r slog.Record) error {
	time.Sleep(100 * time.Millisecond)
	return h.Handler.Handle(ctx, r)
}
