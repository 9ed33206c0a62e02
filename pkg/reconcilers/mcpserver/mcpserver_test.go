package mcpserver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
	"github.com/musterd/musterd/pkg/supervisor"
)

func TestAnAutoStartedServerRunsWithItsExposedToolsAndReadyCondition(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("echo")
	h.declare(t, "echo", append(fakeSpec(true, "-tools", "echo,reverse"), "toolPrefix: ec")...)

	res := h.reconcile(t, k)
	require.NoError(t, res.Err)
	assert.False(t, res.Deleted)
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateRunning, st.State)
	assert.Equal(t, []string{"x_ec_echo", "x_ec_reverse"}, st.Tools)
	assert.Equal(t, 2, st.ToolCount)
	assert.Zero(t, st.RestartCount)
	assert.Empty(t, st.LastError)
	require.NotNil(t, st.LastConnected)
	require.NotNil(t, st.LastAttempt)
	assert.Nil(t, st.NextRetryAfter)
	require.Len(t, st.Conditions, 1)
	ready := st.Conditions[0]
	assert.Equal(t, v1alpha1.ConditionReady, ready.Type)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, "Running", ready.Reason)
	assert.Equal(t, "serving 2 tools", ready.Message)
	pid := h.pid(t, k)

	// Idempotent: the same definition leaves the process alone, and the
	// Ready condition keeps its transition time.
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, pid, h.pid(t, k))
	assert.Equal(t, ready.LastTransitionTime, h.status(t, k).Conditions[0].LastTransitionTime)
}

func TestAutoStartFalseKeepsTheServerStoppedWithNoProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("idle")
	h.declare(t, "idle", fakeSpec(false)...)
	require.NoError(t, h.reconcile(t, k).Err)
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateStopped, st.State)
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, mcpserver.ReasonAutoStartDisabled, st.Conditions[0].Reason)
	_, known := h.sup.Get(k)
	assert.False(t, known, "no process was started")

	// A running server whose autoStart turns false is stopped.
	h.declare(t, "idle", fakeSpec(true)...)
	require.NoError(t, h.reconcile(t, k).Err)
	pid := h.pid(t, k)
	h.declare(t, "idle", fakeSpec(false)...)
	require.NoError(t, h.reconcile(t, k).Err)
	assert.True(t, processGone(pid), "pid %d is gone", pid)
	assert.Equal(t, v1alpha1.MCPServerStateStopped, h.status(t, k).State)
	assert.Empty(t, h.status(t, k).Tools)
}

func TestASpecChangeRestartsWithTheNewArgsButADescriptionDoesNot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("change")
	h.declare(t, "change", fakeSpec(true, "-tools", "one")...)
	require.NoError(t, h.reconcile(t, k).Err)
	first := h.pid(t, k)

	h.declare(t, "change", append(fakeSpec(true, "-tools", "one"), "description: now described")...)
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, first, h.pid(t, k), "a description is no reason to restart")

	h.declare(t, "change", fakeSpec(true, "-tools", "two,three")...)
	require.NoError(t, h.reconcile(t, k).Err)
	second := h.pid(t, k)
	assert.NotEqual(t, first, second)
	assert.True(t, processGone(first))
	st := h.status(t, k)
	assert.Equal(t, []string{"x_change_three", "x_change_two"}, st.Tools, "the new args are in effect")
	assert.Equal(t, 1, st.RestartCount)
}

func TestADeletedServerIsStoppedAndForgotten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("gone")
	h.declare(t, "gone", fakeSpec(true)...)
	require.NoError(t, h.reconcile(t, k).Err)
	pid := h.pid(t, k)

	h.ix.RemoveFile("mcpservers/gone.yaml")
	keys, err := h.r.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []events.Key{k}, keys, "listed until reconciled away")
	res := h.reconcile(t, k)
	require.NoError(t, res.Err)
	assert.True(t, res.Deleted)
	assert.True(t, processGone(pid), "pid %d is gone", pid)
	_, ok := h.r.Status(k)
	assert.False(t, ok)
	keys, err = h.r.List(t.Context())
	require.NoError(t, err)
	assert.Empty(t, keys)
}

func TestListReachesAnOrphanTheSupervisorRunsAndItsReconcilePrunesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("orphan")
	_, err := h.sup.Ensure(t.Context(), k, v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: fakeBin, Timeout: 20})
	require.NoError(t, err)
	obs, _, err := h.sup.Wait(t.Context(), k)
	require.NoError(t, err)

	keys, err := h.r.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []events.Key{k}, keys)
	res := h.reconcile(t, k)
	require.NoError(t, res.Err)
	assert.True(t, res.Deleted)
	assert.True(t, processGone(obs.PID))
	assert.Empty(t, h.sup.Keys())
}

func TestAnInvalidEditKeepsTheLastGoodServerRunningAndShowsTheFilesError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("edited")
	h.declare(t, "edited", fakeSpec(true)...)
	require.NoError(t, h.reconcile(t, k).Err)
	pid := h.pid(t, k)

	h.declare(t, "edited", "type: stdio", "autoStart: true") // no command
	res := h.reconcile(t, k)
	require.Error(t, res.Err)
	assert.True(t, reconcilers.IsPermanent(res.Err))
	assert.Contains(t, res.Err.Error(), "mcpservers/edited.yaml:")
	assert.Contains(t, res.Err.Error(), "spec.command")
	assert.Equal(t, pid, h.pid(t, k), "the last good definition keeps running")
	assert.Equal(t, v1alpha1.MCPServerStateRunning, h.status(t, k).State)
}

func TestAServerThatExitsAtOnceIsRetriedExactlyWhenItsBackoffEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: time.Hour, Jitter: -1}})
	k := serverKey("crashy")
	h.declare(t, "crashy", append(fakeSpec(true, "-exit-at-once", "-stderr-env", "API_TOKEN"), "env: {API_TOKEN: s3cr3t-value}")...)

	res := h.reconcile(t, k)
	require.Error(t, res.Err)
	assert.False(t, reconcilers.IsPermanent(res.Err))
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateFailed, st.State)
	assert.Equal(t, 1, st.ConsecutiveFailures)
	assert.Contains(t, st.LastError, "exited with exit code 3")
	assert.Contains(t, st.LastError, "mcp-fake: exiting at once as asked", "the stderr tail")
	require.NotNil(t, st.NextRetryAfter)
	at, ok := reconcilers.RetryTime(res.Err)
	require.True(t, ok, "the reconcile names its retry time: %v", res.Err)
	obs, _ := h.sup.Get(k)
	assert.Equal(t, obs.NextRetryAfter, at, "exactly when the supervisor allows the next start")
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, mcpserver.ReasonBackingOff, st.Conditions[0].Reason)

	// Reconciled again before then: no start, the same retry time.
	res = h.reconcile(t, k)
	again, ok := reconcilers.RetryTime(res.Err)
	require.True(t, ok)
	assert.Equal(t, at, again)
	_, backingOff := errors.AsType[*supervisor.RetryLaterError](res.Err)
	assert.True(t, backingOff)
	st = h.status(t, k)
	assert.Equal(t, 1, st.ConsecutiveFailures, "no second start")
	assert.Zero(t, st.RestartCount)
	assert.Equal(t, mcpserver.ReasonBackingOff, st.Conditions[0].Reason)

	// The env value never shows, though the server printed it.
	for _, text := range []string{res.Err.Error(), st.LastError, st.Conditions[0].Message} {
		assert.NotContains(t, text, "s3cr3t-value")
	}
	assert.Contains(t, st.LastError, "[redacted]")
}

func TestAFileThatNeverParsedIsAPermanentErrorWithNoStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("broken")
	h.ix.SetFile("mcpservers/broken.yaml", nil, errors.New("mcpservers/broken.yaml:1: yaml: bad"), k)
	res := h.reconcile(t, k)
	assert.True(t, reconcilers.IsPermanent(res.Err))
	_, ok := h.r.Status(k)
	assert.False(t, ok)
}

// A reconcile asks for a start and returns: the status says Starting while
// the server starts, and the reconcile that its outcome brings records it.
func TestAReconcileDoesNotWaitForASlowStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("slow")
	h.declare(t, "slow", fakeSpec(true, "-slow-start", "2s")...)

	require.NoError(t, h.reconcileOnce(t, k).Err)
	obs, _ := h.sup.Get(k)
	assert.Equal(t, v1alpha1.MCPServerStateStarting, obs.State, "the start goes on after the reconcile returned")
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateStarting, st.State)
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, "Starting", st.Conditions[0].Reason)
	assert.Contains(t, st.Conditions[0].Message, "starting")
	assert.Empty(t, st.Tools)

	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, v1alpha1.MCPServerStateRunning, h.status(t, k).State)
}

// A server deleted during its start leaves no process: the reconcile of the
// deletion cancels the start and returns once it is reaped.
func TestADeleteDuringAStartLeavesNoProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("gone-while-starting")
	const marker = "marker-gone-while-starting"
	h.declare(t, "gone-while-starting", fakeSpec(true, "-hang-on-initialize", "-tools", marker)...)
	require.NoError(t, h.reconcileOnce(t, k).Err)
	require.Eventually(t, func() bool { return len(processesWith(t, marker)) == 1 }, deadline, 5*time.Millisecond, "the start is under way")

	h.ix.RemoveFile("mcpservers/gone-while-starting.yaml")
	res := h.reconcileOnce(t, k)
	require.NoError(t, res.Err)
	assert.True(t, res.Deleted)
	assert.Empty(t, h.sup.Keys())
	_, ok := h.r.Status(k)
	assert.False(t, ok)
	assert.Empty(t, processesWith(t, marker), "reaped before the reconcile returned")
}
