package main

// Fault injection through the real binary: servers that crash, hang or are
// killed, a SIGTERM with many children, a state dir that cannot be written
// and a config dir that disappears. Each test names the fault and what must
// hold through it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// A server that crashes at once is restarted by the binary, on its
// backoff rather than in a hot loop: once it has failed twice (started,
// crashed, started again, crashed), its status says why (exit code 3), and
// its next try waits the backoff of its streak, no less and at most 10%
// jitter more. The schedule itself, each delay to the cap and the reset
// after a stable run, is proved exactly in virtual time by pkg/supervisor
// (TestACrashingServerStartsExactlyOnTheBackoffScheduleUpToItsCap and
// beside it); here it is the real child, binary and API.
func TestE2ECrashingServerIsRestartedOnItsBackoff(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/crash.yaml", mcpServerYAML("crash", stdioSpec("-exit-at-once", "-tools", marker)...))

	s := e.waitServer(t, "crash", "failed twice", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateFailed && s.Status.ConsecutiveFailures >= 2
	})
	st := s.Status
	assert.Contains(t, st.LastError, "exit code 3")
	require.NotNil(t, st.LastFailureTime)
	require.NotNil(t, st.NextRetryAfter)
	require.NotNil(t, st.LastAttempt)
	assert.False(t, st.LastFailureTime.Before(st.LastAttempt), "the failure is of the last start")
	// The API gives times to the second; the difference of two truncated
	// times is at least the whole seconds of the true one, at most one more.
	floor := min(time.Second<<(st.ConsecutiveFailures-1), 5*time.Minute)
	wait := st.NextRetryAfter.Sub(st.LastFailureTime.Time)
	assert.GreaterOrEqual(t, wait, floor, "failure %d waits its backoff", st.ConsecutiveFailures)
	assert.LessOrEqual(t, wait, floor+floor/10+time.Second, "failure %d waits its backoff, jitter included", st.ConsecutiveFailures)
}

// A server that hangs on initialize times out into Failed, while a server
// beside it keeps running untouched: the same process, Synced, no restart.
func TestE2EAServerHangingOnInitializeLeavesTheOthersAlone(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/steady.yaml", mcpServerYAML("steady", stdioSpec("-tools", "steady,"+marker)...))
	e.waitServer(t, "steady", "is Running", running("x_steady_steady", "x_steady_"+marker))
	steady := theServerProc(t, "steady,"+marker)

	e.write(t, "mcpservers/hang.yaml", mcpServerYAML("hang", append(stdioSpec("-hang-on-initialize", "-tools", "hang,"+marker), "timeout: 2")...))
	e.write(t, "workflows/w.yaml", workflowYAML("w", "x_steady_steady"))
	hung := e.waitServer(t, "hang", "is Failed", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateFailed })
	assert.Contains(t, hung.Status.LastError, "did not answer initialize and tools/list within 2s")
	// Reconciles of others went on while the hanging start waited.
	e.waitWorkflow(t, "w", "Synced", "x_steady_steady")

	s, ok := e.server(t, "steady")
	require.True(t, ok)
	assert.True(t, running("x_steady_steady", "x_steady_"+marker)(s), "%+v", s)
	assert.Zero(t, s.Status.RestartCount)
	assert.True(t, steady.alive(), "the other server was stopped")
	assert.Equal(t, []proc{steady}, serverProcs("steady,"+marker), "the other server was restarted")
}

// SIGTERM to musterd with 20 children, two of which ignore SIGTERM: musterd
// exits 0 within 10 s, and no child, nor any process of a child's process
// group, is left.
func TestE2ESIGTERMWithTwentyChildrenLeavesNoOrphanWithin10s(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	const n = 20
	for i := range n {
		args := []string{"-tools", fmt.Sprintf("t%d,%s", i, marker)}
		if i < 2 {
			args = append([]string{"-ignore-sigterm"}, args...)
		}
		e.write(t, fmt.Sprintf("mcpservers/s%02d.yaml", i), mcpServerYAML(fmt.Sprintf("s%02d", i), stdioSpec(args...)...))
	}
	eventually(t, "20 servers Running", func() bool {
		items := e.list(t, "mcpservers")
		if len(items) != n {
			return false
		}
		for _, it := range items {
			if it.Reconcile.State != "Synced" {
				return false
			}
		}
		return len(serverProcs(marker)) == n
	})
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		e.waitServer(t, name, "is Running", running(fmt.Sprintf("x_%s_t%d", name, i), "x_"+name+"_"+marker))
	}
	children := descendants(e.cmd.Process.Pid)
	require.Len(t, children, n, "musterd's children are its 20 servers")
	assert.ElementsMatch(t, pids(serverProcs(marker)), pids(children))
	var groups []int
	for _, p := range children {
		require.Equal(t, p.pid, p.pgrp, "each server leads its own group")
		groups = append(groups, p.pgrp)
	}

	signalled := time.Now()
	e.stopWith(t, syscall.SIGTERM, 10*time.Second)
	t.Logf("musterd exited %v after SIGTERM (its servers' grace is 5 s)", time.Since(signalled).Round(time.Millisecond))
	for _, p := range children {
		assert.False(t, p.alive(), "pid %d %q outlived musterd", p.pid, p.args)
	}
	for _, pgid := range groups {
		assert.False(t, proctest.GroupExists(pgid), "process group %d outlived musterd", pgid)
	}
	assert.Empty(t, serverProcs(marker), "an orphan remains")
}

// recentEvents returns the types and errors of a workflow's recent events.
func (e *fsEnv) recentEvents(t *testing.T, name string) []string {
	t.Helper()
	code, body := e.get(t, "/api/v1/resources/workflows/default/"+name+"/events")
	require.Equal(t, 200, code, body)
	var list struct {
		Items []struct {
			Type  string
			Event struct{ Error string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list), body)
	var out []string
	for _, it := range list.Items {
		out = append(out, it.Type+" "+it.Event.Error)
	}
	return out
}

// The state dir becomes unwritable (its status/ directory replaced by a
// file, which blocks root too): status writes fail with an error naming the
// status file and the cause, in the log and in the resource's events;
// reconciliation goes on; once writable again, the status files catch up
// with what happened meanwhile.
func TestE2EAnUnwritableStateDirFailsStatusWritesClearlyAndCatchesUp(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/w1.yaml", workflowYAML("w1", "x_a_one"))
	e.waitWorkflow(t, "w1", "Synced", "x_a_one")
	eventually(t, "w1's status file says Synced", func() bool {
		s, ok := e.statusFile("w1")
		return ok && strings.Contains(s, "state: Synced")
	})

	status := filepath.Join(e.state, "status")
	require.NoError(t, os.Rename(status, status+".moved"))
	require.NoError(t, os.WriteFile(status, []byte("not a directory"), 0o600))

	e.write(t, "workflows/w1.yaml", workflowYAML("w1", "x_a_two"))
	e.write(t, "workflows/w2.yaml", workflowYAML("w2", "x_a_three"))
	e.waitWorkflow(t, "w1", "Synced", "x_a_two")
	e.waitWorkflow(t, "w2", "Synced", "x_a_three")
	eventually(t, "the failed status write is logged, naming the file and the cause", func() bool {
		log := e.stderr.String()
		return strings.Contains(log, "status write failed") && strings.Contains(log, "status/workflows/default/w2.yaml") &&
			strings.Contains(log, "not a directory")
	})
	eventually(t, "w2's events show the failed status write", func() bool {
		return slices.ContainsFunc(e.recentEvents(t, "w2"), func(ev string) bool {
			return strings.HasPrefix(ev, "StatusSyncFailed ") && strings.Contains(ev, "status/workflows/default/w2.yaml") && strings.Contains(ev, "not a directory")
		})
	})

	require.NoError(t, os.Remove(status))
	eventually(t, "the status files catch up", func() bool {
		s1, ok1 := e.statusFile("w1")
		s2, ok2 := e.statusFile("w2")
		return ok1 && ok2 && strings.Contains(s1, "state: Synced") && strings.Contains(s1, "x_a_two") &&
			strings.Contains(s2, "state: Synced") && strings.Contains(s2, "x_a_three")
	})
}

// The whole config dir deleted while a server runs: once it is really gone,
// the resync's deletes stop the server and forget it (its status file
// too); recreated, it runs again. (A directory that cannot be listed for a
// moment deletes nothing: TestADirectoryThatCannotBeListedDeletesNothing
// in pkg/watchers/fs injects the failing listing that root cannot cause
// with permissions.)
func TestE2EConfigDirDeletedStopsItsServersAndRecreatedStartsThem(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	def := mcpServerYAML("srv", stdioSpec("-tools", marker)...)
	e.write(t, "mcpservers/srv.yaml", def)
	e.waitServer(t, "srv", "is Running", running("x_srv_"+marker))
	p := theServerProc(t, marker)

	require.NoError(t, os.RemoveAll(e.config))
	eventually(t, "the server is gone from the API", func() bool {
		_, ok := e.server(t, "srv")
		return !ok
	})
	eventually(t, "its process is stopped", func() bool { return !p.alive() })
	eventually(t, "its status file is removed", func() bool {
		_, err := os.Stat(filepath.Join(e.state, "status", "mcpservers", "default", "srv.yaml"))
		return os.IsNotExist(err)
	})

	require.NoError(t, os.MkdirAll(filepath.Join(e.config, "mcpservers"), 0o755))
	e.write(t, "mcpservers/srv.yaml", def)
	e.waitServer(t, "srv", "is Running again", running("x_srv_"+marker))
	assert.False(t, theServerProc(t, marker).same(p))
}
