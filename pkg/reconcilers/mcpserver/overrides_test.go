package mcpserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
	"github.com/musterd/musterd/pkg/services"
	"github.com/musterd/musterd/pkg/supervisor"
)

// An operator's stop holds on every reconcile until the definition
// changes; a start runs a server whose autoStart is false; a restart
// starts it afresh, once.
func TestOverridesAreHonouredOnEveryReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	ov, err := services.New(nil)
	require.NoError(t, err)
	h.r.SetOverrides(ov)
	k := serverKey("ops")
	h.declare(t, "ops", fakeSpec(true)...)
	require.NoError(t, h.reconcile(t, k).Err)
	first := h.pid(t, k)

	require.NoError(t, ov.Set(services.Record{Key: k, State: services.StateStopped, Reason: "maintenance", Hash: h.ix.Hash(k)}))
	for range 2 { // the stop, then a resync
		require.NoError(t, h.reconcile(t, k).Err)
		st := h.status(t, k)
		assert.Equal(t, v1alpha1.MCPServerStateStopped, st.State)
		ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		require.NotNil(t, ready)
		assert.Equal(t, mcpserver.ReasonStoppedByOperator, ready.Reason)
		assert.Contains(t, ready.Message, "maintenance")
		_, known := h.sup.Get(k)
		assert.False(t, known, "nothing runs")
	}
	assert.True(t, processGone(first))

	// A change of the definition ends the stop.
	h.declare(t, "ops", fakeSpec(true, "-tools", "a,b")...)
	require.NoError(t, h.reconcile(t, k).Err)
	second := h.pid(t, k)
	_, kept := ov.Get(k)
	assert.False(t, kept, "the stop of the old definition is dropped")

	// A restart: a new process, once.
	ov.Restart(k, "r1")
	require.NoError(t, h.reconcile(t, k).Err)
	third := h.pid(t, k)
	assert.NotEqual(t, second, third)
	assert.True(t, processGone(second))
	assert.Equal(t, 0, h.status(t, k).RestartCount, "a fresh start, not a restart after a crash")
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, third, h.pid(t, k), "the restart is carried out once")

	// A start runs a server whose autoStart is false.
	h.declare(t, "ops", fakeSpec(false)...)
	require.NoError(t, h.reconcile(t, k).Err)
	_, known := h.sup.Get(k)
	assert.False(t, known)
	require.NoError(t, ov.Set(services.Record{Key: k, State: services.StateStarted, Hash: h.ix.Hash(k)}))
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, v1alpha1.MCPServerStateRunning, h.status(t, k).State)
}

// A restart of a crash-looping server starts its failure streak afresh.
func TestARestartResetsTheFailureStreak(t *testing.T) {
	t.Parallel()
	// A backoff no test outlasts: only the restart can start it again.
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: time.Hour, Max: time.Hour}})
	ov, err := services.New(nil)
	require.NoError(t, err)
	h.r.SetOverrides(ov)
	k := serverKey("loop")
	h.declare(t, "loop", fakeSpec(true, "-exit-at-once")...)
	require.Error(t, h.reconcile(t, k).Err)
	require.Equal(t, 1, h.status(t, k).ConsecutiveFailures)
	// In backoff: a reconcile now does not start it.
	require.Error(t, h.reconcile(t, k).Err)
	assert.Equal(t, 1, h.status(t, k).ConsecutiveFailures, "the backoff held it back")

	ov.Restart(k, "r1")
	require.Error(t, h.reconcile(t, k).Err, "it crashes again")
	st := h.status(t, k)
	assert.Equal(t, 1, st.ConsecutiveFailures, "the restart's crash starts a new streak")
	assert.Equal(t, 0, st.RestartCount)
}

// An operator's stop made while the server starts wins: the start is
// cancelled, no process is left, and nothing starts it after.
func TestAStopOverrideDuringAStartWins(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	ov, err := services.New(nil)
	require.NoError(t, err)
	h.r.SetOverrides(ov)
	k := serverKey("stopped-while-starting")
	const marker = "marker-stopped-while-starting"
	h.declare(t, "stopped-while-starting", append(fakeSpec(true, "-hang-on-initialize", "-tools", marker)[:4], "timeout: 300")...)
	require.NoError(t, h.reconcileOnce(t, k).Err)
	require.Eventually(t, func() bool { return len(processesWith(t, marker)) == 1 }, deadline, 5*time.Millisecond, "the start is under way")

	require.NoError(t, ov.Set(services.Record{Key: k, State: services.StateStopped, Reason: "maintenance", Hash: h.ix.Hash(k)}))
	require.NoError(t, h.reconcileOnce(t, k).Err)
	assert.Empty(t, processesWith(t, marker), "reaped before the reconcile returned")
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateStopped, st.State)
	assert.Equal(t, mcpserver.ReasonStoppedByOperator, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Reason)
	_, known, err := h.sup.Wait(t.Context(), k)
	require.NoError(t, err)
	assert.False(t, known, "nothing starts after the stop")
}
