package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

const (
	running = v1alpha1.MCPServerStateRunning
	failed  = v1alpha1.MCPServerStateFailed
)

func TestAStdioServerRunsWithItsToolsAndEnsureIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("tools")
	spec := fake("-tools", "echo,add")

	obs := h.ensure(t, k, spec)
	assert.Equal(t, running, obs.State)
	assert.Equal(t, []string{"add", "echo"}, obs.Tools)
	assert.True(t, processExists(obs.PID), "pid %d", obs.PID)
	assert.False(t, obs.LastConnected.IsZero())
	assert.Zero(t, obs.RestartCount)
	assert.NotEmpty(t, obs.SpecHash)

	spec.Description = "a new description, which restarts nothing"
	again := h.ensure(t, k, spec)
	assert.Equal(t, obs, again, "the same server, untouched")
	got, ok := h.sup.Get(events.NewKey("MCPServer", "default", "tools"))
	require.True(t, ok, "keys are canonical")
	assert.Equal(t, obs, got)
	assert.Equal(t, []events.Key{k}, h.sup.Keys())
	h.rec.waitFor(t, k, "running", func(o supervisor.Observed) bool { return o.State == running })
	// Starting when asked for, Starting again (LastAttempt set) when the
	// start began, Running.
	assert.Equal(t, []v1alpha1.MCPServerState{v1alpha1.MCPServerStateStarting, v1alpha1.MCPServerStateStarting, running}, h.rec.states(k))
}

func TestASpecChangeRestartsTheServerWithTheNewArgs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("respec")
	first := h.ensure(t, k, fake("-tools", "echo"))
	require.Equal(t, []string{"echo"}, first.Tools)

	second := h.ensure(t, k, fake("-tools", "echo,sum"))
	assert.Equal(t, running, second.State)
	assert.NotEqual(t, first.PID, second.PID)
	assert.Equal(t, []string{"echo", "sum"}, second.Tools, "the new args are in effect")
	assert.Equal(t, 1, second.RestartCount)
	assert.NotEqual(t, first.SpecHash, second.SpecHash)
	assert.False(t, processExists(first.PID), "the old process is reaped before the new one starts")
	h.rec.waitFor(t, k, "restarted", func(o supervisor.Observed) bool { return o.PID == second.PID })
	assert.Equal(t, []v1alpha1.MCPServerState{v1alpha1.MCPServerStateStarting, v1alpha1.MCPServerStateStarting, running, v1alpha1.MCPServerStateStopped, v1alpha1.MCPServerStateStarting, running},
		h.rec.states(k))
}

// OnChangeSync has seen every change, the last one the observation Ensure
// returns, by the time Ensure or Stop returns: no polling. What the runtime
// bridge keeps with it (the catalogue) is thus never behind Ensure.
func TestOnChangeSyncHasSeenEveryChangeWhenEnsureAndStopReturn(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen []supervisor.Observed
	)
	last := func() (supervisor.Observed, []v1alpha1.MCPServerState) {
		mu.Lock()
		defer mu.Unlock()
		var states []v1alpha1.MCPServerState
		for _, o := range seen {
			states = append(states, o.State)
		}
		return seen[len(seen)-1], states
	}
	h := newHarness(t, supervisor.Options{OnChangeSync: func(_ events.Key, o supervisor.Observed) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, o)
	}})
	k := key("insync")

	first := h.ensure(t, k, fake("-tools", "echo"))
	got, states := last()
	assert.Equal(t, first, got)
	assert.Equal(t, []v1alpha1.MCPServerState{v1alpha1.MCPServerStateStarting, v1alpha1.MCPServerStateStarting, running}, states)

	second := h.ensure(t, k, fake("-tools", "echo,sum"))
	got, states = last()
	assert.Equal(t, second, got, "the restart's Running, with the new tools")
	assert.Equal(t, []string{"echo", "sum"}, got.Tools)
	assert.Len(t, states, 6)

	require.NoError(t, h.sup.Stop(t.Context(), k))
	got, _ = last()
	assert.Equal(t, v1alpha1.MCPServerStateStopped, got.State)
	assert.Empty(t, got.Tools)
	// OnChange, from its own goroutine, gets the same changes in the same
	// order, later.
	mu.Lock()
	defer mu.Unlock()
	require.Eventually(t, func() bool { return len(h.rec.of(k)) >= len(seen) }, deadline, 5*time.Millisecond)
	assert.Equal(t, seen, h.rec.of(k))
}

func TestStopKillsTheProcessGroupAndForgetsTheServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("stop")
	obs := h.ensure(t, k, fake())

	require.NoError(t, h.sup.Stop(t.Context(), k))
	assert.False(t, processExists(obs.PID))
	assert.False(t, groupExists(obs.PID))
	_, ok := h.sup.Get(k)
	assert.False(t, ok)
	assert.Empty(t, h.sup.Keys())
	last := h.rec.waitFor(t, k, "stopped", func(o supervisor.Observed) bool { return o.State == v1alpha1.MCPServerStateStopped })
	assert.Zero(t, last.PID)
	assert.Empty(t, last.Tools)
	require.NoError(t, h.sup.Stop(t.Context(), k), "stopping an unknown key does nothing")
}

func TestAServerThatIgnoresSIGTERMIsKilledAfterStopGrace(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	h := newHarness(t, supervisor.Options{StopGrace: grace})
	k := key("stubborn")
	obs := h.ensure(t, k, fake("-ignore-sigterm"))

	began := time.Now()
	require.NoError(t, h.sup.Stop(t.Context(), k))
	assert.GreaterOrEqual(t, time.Since(began), grace, "SIGTERM and stdin's EOF did not end it: only SIGKILL after the grace did")
	assert.False(t, processExists(obs.PID))
	assert.Contains(t, h.logs.String(), "outlived its grace after SIGTERM; killed it")
}

func TestStopOutOfTimeKillsAtOnceAndStillReaps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{StopGrace: time.Hour})
	k := key("impatient")
	obs := h.ensure(t, k, fake("-ignore-sigterm"))

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := h.sup.Stop(ctx, k)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "killed, out of time to stop gracefully")
	assert.False(t, processExists(obs.PID), "reaped before Stop returned")
}

var pidInStderr = regexp.MustCompile(`mcp-fake: starting, pid (\d+)`)

// pidOf reads the pid that mcp-fake wrote to its stderr, from a LastError.
func pidOf(t *testing.T, lastError string) int {
	t.Helper()
	m := pidInStderr.FindStringSubmatch(lastError)
	require.NotNil(t, m, "no pid in %q", lastError)
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return pid
}

func TestAServerThatExitsAtOnceFailsWithItsExitCodeAndRedactedStderrAndBacksOff(t *testing.T) {
	t.Parallel()
	const base = 100 * time.Millisecond
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: base, Max: time.Minute, Jitter: 0.1}})
	k := key("exit-at-once")
	spec := fake("-exit-at-once", "-stderr-secret", "hunter2-token")

	// Ensure as fast as a buggy caller can; only the backoff paces starts.
	var attempts []time.Time
	refusals := 0
	stop := time.Now().Add(deadline)
	for len(attempts) < 4 && time.Now().Before(stop) {
		obs, err := h.sup.Ensure(t.Context(), k, spec)
		if later, ok := errors.AsType[*supervisor.RetryLaterError](err); ok {
			refusals++
			assert.Equal(t, obs.NextRetryAfter, later.Until)
			assert.Equal(t, len(attempts), later.ConsecutiveFailures)
			assert.Contains(t, err.Error(), "backing off after")
			time.Sleep(time.Millisecond)
			continue
		}
		require.NoError(t, err, "a start is asked for, not waited for")
		assert.Equal(t, v1alpha1.MCPServerStateStarting, obs.State)
		again, err := h.sup.Ensure(t.Context(), k, spec)
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.MCPServerStateStarting, again.State, "asked again while it starts: the one start goes on")
		obs = h.settle(t, k)
		attempts = append(attempts, obs.LastAttempt)
		assert.Equal(t, failed, obs.State)
		assert.Zero(t, obs.PID)
		assert.Equal(t, len(attempts), obs.ConsecutiveFailures)
		assert.Zero(t, obs.RestartCount, "failed starts are failures, not restarts: no process of it ever ran")
		assert.True(t, obs.NextRetryAfter.After(obs.LastAttempt))
		assert.Contains(t, obs.LastError, "exited with exit code 3 before it finished starting")
		assert.Contains(t, obs.LastError, "mcp-fake: exiting at once as asked, exit code 3", "the stderr tail")
		assert.Contains(t, obs.LastError, "password=[redacted]")
		pid := pidOf(t, obs.LastError)
		assert.False(t, processExists(pid), "pid %d reaped", pid)
	}
	require.Len(t, attempts, 4)
	assert.Positive(t, refusals, "Ensure refused while the server backed off")
	for i := 1; i < len(attempts); i++ {
		gap := attempts[i].Sub(attempts[i-1])
		assert.GreaterOrEqual(t, gap, base<<(i-1), "start %d came %s after the one before; the backoff allows no less than %s", i+1, gap, base<<(i-1))
	}
	h.rec.waitFor(t, k, "last failure", func(o supervisor.Observed) bool { return o.ConsecutiveFailures == len(attempts) })
	launched := map[time.Time]bool{}
	for _, o := range h.rec.of(k) {
		if o.State == v1alpha1.MCPServerStateStarting && !o.LastAttempt.IsZero() {
			launched[o.LastAttempt] = true
		}
	}
	assert.Len(t, launched, len(attempts), "no start beyond those seen")
	assert.NotContains(t, h.logs.String(), "hunter2-token")
}

func TestAChangedSpecIsNotHeldBackByTheBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: time.Hour, Jitter: -1}})
	k := key("fixed")
	require.Equal(t, failed, h.ensure(t, k, fake("-exit-at-once")).State)
	_, err := h.sup.Ensure(t.Context(), k, fake("-exit-at-once"))
	later, ok := errors.AsType[*supervisor.RetryLaterError](err)
	require.True(t, ok, "err %v", err)
	assert.Greater(t, time.Until(later.Until), 59*time.Minute)

	obs := h.ensure(t, k, fake("-tools", "fixed"))
	assert.Equal(t, running, obs.State)
	assert.Equal(t, 1, obs.ConsecutiveFailures, "the streak goes on until the server proves stable")
	assert.Zero(t, obs.NextRetryAfter)
}

func TestAServerThatHangsOnInitializeTimesOutIntoFailedAndIsKilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("hang")
	spec := fake("-hang-on-initialize")
	spec.Timeout = 1

	obs := h.ensure(t, k, spec)
	assert.Equal(t, failed, obs.State)
	assert.Contains(t, obs.LastError, "did not answer initialize and tools/list within 1s")
	assert.Contains(t, obs.LastError, "mcp-fake: hanging on initialize as asked")
	pid := pidOf(t, obs.LastError)
	assert.False(t, processExists(pid))
	assert.False(t, groupExists(pid))
}

func TestASlowStartWithinTheTimeoutRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	obs := h.ensure(t, key("slow"), fake("-slow-start", "500ms"))
	assert.Equal(t, running, obs.State)
}

func TestAKilledServerIsNoticedAndRestarted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: 50 * time.Millisecond}})
	k := key("kill9")
	first := h.ensure(t, k, fake())

	require.NoError(t, proctest.Kill(first.PID))
	crashed := h.rec.waitFor(t, k, "failed", func(o supervisor.Observed) bool { return o.State == failed })
	assert.Contains(t, crashed.LastError, "was killed by signal 9 (killed)")
	assert.Equal(t, 1, crashed.ConsecutiveFailures)
	assert.Empty(t, crashed.Tools, "a dead server offers no tools")

	second := ensureUntilStarted(t, h, k, fake())
	assert.NotEqual(t, first.PID, second.PID)
	assert.Equal(t, 1, second.RestartCount)
	assert.True(t, processExists(second.PID))
}

// ensureUntilStarted calls Ensure, waiting out the backoff, until it starts
// the server.
func ensureUntilStarted(t *testing.T, h *harness, k events.Key, spec v1alpha1.MCPServerSpec) supervisor.Observed {
	t.Helper()
	stop := time.Now().Add(deadline)
	for time.Now().Before(stop) {
		_, err := h.sup.Ensure(t.Context(), k, spec)
		if later, ok := errors.AsType[*supervisor.RetryLaterError](err); ok {
			time.Sleep(time.Until(later.Until))
			continue
		}
		require.NoError(t, err)
		return h.settle(t, k)
	}
	t.Fatalf("%s did not start within %s", k, deadline)
	return supervisor.Observed{}
}

func TestACrashIsNoticedWithItsExitCodeAndStderr(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("crash-after")
	h.ensure(t, k, fake("-crash-after", "300ms"))
	crashed := h.rec.waitFor(t, k, "failed", func(o supervisor.Observed) bool { return o.State == failed })
	assert.Contains(t, crashed.LastError, "exited with exit code 1; stderr:")
	assert.Contains(t, crashed.LastError, "mcp-fake: crashing after 300ms as asked, exit code 1")
	assert.False(t, crashed.NextRetryAfter.IsZero())
}

func TestAFrozenServerFailsItsPingAndIsKilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{PingInterval: 100 * time.Millisecond, PingTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond})
	k := key("frozen")
	obs := h.ensure(t, k, fake())

	freeze(t, obs.PID)
	frozen := h.rec.waitFor(t, k, "failed", func(o supervisor.Observed) bool { return o.State == failed })
	assert.Equal(t, "health ping failed: no answer within 300ms", frozen.LastError)
	require.Eventually(t, func() bool { return !processExists(obs.PID) }, deadline, 5*time.Millisecond, "the frozen process is killed and reaped")
}

func TestToolChangesAreReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("late-tool")
	obs := h.ensure(t, k, fake("-add-tool-after", "300ms"))
	require.Equal(t, []string{"echo"}, obs.Tools)
	changed := h.rec.waitFor(t, k, "tools changed", func(o supervisor.Observed) bool { return len(o.Tools) == 2 })
	assert.Equal(t, []string{"echo", "late"}, changed.Tools)
	assert.Equal(t, obs.PID, changed.PID)
	got, _ := h.sup.Get(k)
	assert.Equal(t, []string{"echo", "late"}, got.Tools)
}

func TestRunningForStableAfterClearsTheFailureStreak(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{StableAfter: 500 * time.Millisecond, RestartBackoff: supervisor.Backoff{Base: 50 * time.Millisecond}})
	k := key("stable")
	first := h.ensure(t, k, fake())
	require.NoError(t, proctest.Kill(first.PID))
	h.rec.waitFor(t, k, "failed", func(o supervisor.Observed) bool { return o.State == failed })

	restarted := ensureUntilStarted(t, h, k, fake())
	assert.Equal(t, 1, restarted.ConsecutiveFailures)
	assert.Empty(t, restarted.LastError, "running: no error now")
	assert.Contains(t, restarted.LastFailure, "was killed by signal 9", "the past failure is kept")
	assert.False(t, restarted.LastFailureTime.IsZero())
	cleared := h.rec.waitFor(t, k, "streak cleared", func(o supervisor.Observed) bool {
		return o.State == running && o.ConsecutiveFailures == 0 && o.PID == restarted.PID
	})
	assert.Empty(t, cleared.LastError)
	assert.Equal(t, restarted.LastFailure, cleared.LastFailure)
	assert.Equal(t, 1, cleared.RestartCount, "restarts still count")
}

func TestShutdownLeavesNoProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	const servers = 20
	pids := make([]int, servers)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() {
			k := key(fmt.Sprintf("s%02d", i))
			_, err := h.sup.Ensure(t.Context(), k, fake())
			if assert.NoError(t, err) {
				obs, _, err := h.sup.Wait(t.Context(), k)
				assert.NoError(t, err)
				pids[i] = obs.PID
			}
		})
	}
	wg.Wait()
	require.Len(t, h.sup.Keys(), servers)
	for _, pid := range pids {
		require.True(t, processExists(pid))
	}

	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	require.NoError(t, h.sup.Shutdown(ctx))
	for _, pid := range pids {
		assert.False(t, processExists(pid), "pid %d", pid)
		assert.False(t, groupExists(pid), "group %d", pid)
	}
	for i := range servers {
		states := h.rec.states(key(fmt.Sprintf("s%02d", i)))
		assert.Equal(t, v1alpha1.MCPServerStateStopped, states[len(states)-1], "the last change, delivered before Shutdown returned")
	}
	_, err := h.sup.Ensure(t.Context(), key("late"), fake())
	assert.ErrorIs(t, err, supervisor.ErrShutdown)
}

func TestEnvValuesNeverLeakIntoErrorsStatusOrLogs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("env-secret")
	spec := fake("-stderr-env", "SERVICE_KEY", "-exit-at-once")
	spec.Env = map[string]string{"SERVICE_KEY": "s3cr3t-env-value"}

	obs := h.ensure(t, k, spec)
	assert.Contains(t, obs.LastError, "mcp-fake: [redacted]", "the server got the value, and printed it")
	_, err := h.sup.Ensure(t.Context(), k, spec)
	require.Error(t, err, "backing off")
	for what, text := range map[string]string{
		"error": err.Error(), "observed": fmt.Sprintf("%+v", obs), "changes": fmt.Sprintf("%+v", h.rec.of(k)), "logs": h.logs.String(),
	} {
		assert.NotContains(t, text, "s3cr3t-env-value", what)
	}
}
