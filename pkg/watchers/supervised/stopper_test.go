package supervised_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/proctest"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
	"github.com/musterd/musterd/pkg/watchers/supervised"
)

// fakeBin is cmd/mcp-fake, built once for the tests.
var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

func TestTheStopperShutsTheSupervisorDownWhenItsContextEnds(t *testing.T) {
	sup := supervisor.New(supervisor.Options{Logger: slog.New(slog.DiscardHandler)})
	spec := v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: fakeBin, Timeout: 20}
	_, err := sup.Ensure(t.Context(), echo, spec)
	require.NoError(t, err)
	gentle, _, err := sup.Wait(t.Context(), echo)
	require.NoError(t, err)
	spec.Args = []string{"-ignore-sigterm"}
	_, err = sup.Ensure(t.Context(), remote, spec)
	require.NoError(t, err)
	stubborn, _, err := sup.Wait(t.Context(), remote)
	require.NoError(t, err)

	s := supervised.NewStopper(sup, supervised.StopperOptions{Timeout: 200 * time.Millisecond})
	assert.Equal(t, "supervisor", s.Name())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	// A fixed real-time window: that Start does not return is an absence,
	// which no condition can be polled for, and the supervisor's real child
	// processes keep this test out of a synctest bubble. A stopper that
	// returns early fails here in all but a pathologically slow run.
	select {
	case err := <-done:
		t.Fatalf("Start returned before its context ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	assert.True(t, proctest.Exists(gentle.PID), "servers run while the stopper waits")

	cancel()
	err = <-done
	require.Error(t, err, "a server had to be killed, and the error says so")
	assert.Contains(t, err.Error(), "servers killed")
	for _, pid := range []int{gentle.PID, stubborn.PID} {
		assert.False(t, proctest.Exists(pid), "pid %d reaped", pid)
	}
	_, err = sup.Ensure(t.Context(), echo, v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: fakeBin})
	assert.ErrorIs(t, err, supervisor.ErrShutdown)
}
