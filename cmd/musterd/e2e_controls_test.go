package main

// End-to-end tests of the operators' controls: services
// stopped, started and restarted, kinds disabled and enabled, resyncs, the
// overview, each through the real binary's CLI and API.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
)

const controlsToken = "e2e-controls-token"

// stoppedByOperator holds for a server Stopped by an operator, Synced.
func stoppedByOperator(s serverObject) bool {
	ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
	return s.Reconcile.State == "Synced" && s.Status.State == v1alpha1.MCPServerStateStopped &&
		ready != nil && ready.Reason == mcpserver.ReasonStoppedByOperator
}

// The Done-when item "Stop is sticky": a stopped server stays stopped
// through a resync, a kill -9 of musterd and of whatever it left, and a
// restart of musterd; start brings it back. Every mutation needs the
// token.
func TestE2EStopIsStickyThroughResyncKillAndRestart(t *testing.T) {
	e := startFS(t, "-api-token", controlsToken)
	marker := newMarker()
	e.write(t, "mcpservers/sticky.yaml", mcpServerYAML("sticky", stdioSpec("-tools", marker)...))
	e.waitServer(t, "sticky", "is Running", running("x_sticky_"+marker))
	first := theServerProc(t, marker)

	out, code := e.cli(t, "stop", "sticky")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "a valid bearer token is required", "a mutation without the token")
	assert.True(t, first.alive(), "a refused stop stops nothing")

	out, code = e.cli(t, "stop", "sticky", "--reason", "maintenance window", "--token", controlsToken)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "mcpserver sticky: stopped")
	assert.Contains(t, out, "state Stopped", "the answer comes once the stop is reconciled")
	assert.False(t, first.alive())
	s := e.waitServer(t, "sticky", "is stopped by the operator", stoppedByOperator)
	assert.Contains(t, apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady).Message, "maintenance window")
	info, err := os.Stat(filepath.Join(e.state, overridesFile))
	require.NoError(t, err, "the stop is kept in the state dir")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// The request and its reconcile are one chain in describe.
	out, code = e.cli(t, "describe", "mcpservers/sticky", "--token", controlsToken)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `ServiceRequested\s+mcpservers/default/sticky\s+action=stop reason="?maintenance window"? correlationId=`, out)

	// A resync reconciles it, and it stays stopped.
	out, code = e.cli(t, "resync", "--token", controlsToken)
	require.Equal(t, 0, code, out)
	corr := strings.TrimSuffix(strings.Fields(out[strings.Index(out, "(correlation ")+len("(correlation "):])[0], ")")
	s = e.waitServer(t, "sticky", "is reconciled by the resync", func(s serverObject) bool { return s.Reconcile.CorrelationID == corr })
	assert.True(t, stoppedByOperator(s), "%+v", s)
	assert.Empty(t, serverProcs(marker))

	// musterd is killed; whatever of its servers' process groups is left
	// is killed too; musterd comes back on the same dirs.
	require.NoError(t, e.cmd.Process.Signal(syscall.SIGKILL))
	<-e.exited
	for _, p := range serverProcs(marker) {
		_ = proctest.KillGroup(p.pgrp)
	}
	e.runningDaemon = startDaemon(t, "-config-dir", e.config, "-state-dir", e.state, "-debounce", "50ms", "-rescan", "1s", "-api-token", controlsToken)
	e.waitReady(t)
	s = e.waitServer(t, "sticky", "is stopped by the operator after the restart", stoppedByOperator)
	assert.Empty(t, serverProcs(marker), "the restarted musterd did not start it")
	assert.Empty(t, descendants(e.cmd.Process.Pid))

	out, code = e.cli(t, "status")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `Stopped by operator:\s+sticky`, out)

	out, code = e.cli(t, "start", "sticky", "--token", controlsToken)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "mcpserver sticky: started")
	e.waitServer(t, "sticky", "is Running again", running("x_sticky_"+marker))
	theServerProc(t, marker, first)
}

// A spec change ends a stop: the changed definition runs.
func TestE2EASpecChangeEndsAStop(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/edited.yaml", mcpServerYAML("edited", stdioSpec("-tools", marker)...))
	e.waitServer(t, "edited", "is Running", running("x_edited_"+marker))
	out, code := e.cli(t, "stop", "edited")
	require.Equal(t, 0, code, out)
	e.waitServer(t, "edited", "is stopped by the operator", stoppedByOperator)

	e.write(t, "mcpservers/edited.yaml", mcpServerYAML("edited", stdioSpec("-tools", marker+",two")...))
	e.waitServer(t, "edited", "runs its new spec", running("x_edited_"+marker, "x_edited_two"))
}

// A restart is a fresh start: a crash-looping server's failure streak
// starts again from one, where its next crash would have made it longer.
func TestE2ERestartResetsTheBackoff(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/loop.yaml", mcpServerYAML("loop", stdioSpec("-exit-at-once", "-tools", marker)...))
	s := e.waitServer(t, "loop", "failed twice in a row", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateFailed && s.Status.ConsecutiveFailures >= 2
	})
	before := s.Status.ConsecutiveFailures

	out, code := e.cli(t, "restart", "loop")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "restart failed", "the fresh start crashed too, and the answer says so")
	assert.Contains(t, out, "consecutive failures 1", "the restart's crash is the first of a new streak, not failure %d", before+1)
}

// eventStream collects the daemon's events of some types, from the moment
// it returns.
type eventStream struct {
	mu     sync.Mutex
	events []events.Event
}

func (e *fsEnv) stream(t *testing.T, typ ...string) *eventStream {
	t.Helper()
	cl, err := client.New(e.addr, "", nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := cl.Events(ctx, types.EventFilter{Types: typ})
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); st.Close() })
	s := &eventStream{}
	go func() {
		for {
			ev, err := st.Next()
			if err != nil {
				return
			}
			if ev.Event != nil {
				s.mu.Lock()
				s.events = append(s.events, ev.Event)
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// started counts the ReconciliationStarted of each key.
func (s *eventStream) started() map[events.Key]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[events.Key]int{}
	for _, ev := range s.events {
		if st, ok := ev.(events.ReconciliationStarted); ok {
			n[st.Key]++
		}
	}
	return n
}

// barrier reconciles the MCPServer key and waits for its start on the
// stream. With one worker, the coordinator reconciles keys in the order
// they were triggered: whatever was triggered before the barrier has
// started by then, or was dropped.
func (e *fsEnv) barrier(t *testing.T, s *eventStream, key events.Key) {
	t.Helper()
	before := s.started()[key]
	out, code := e.cli(t, "reconcile", "mcpservers/"+key.Name)
	require.Equal(t, 0, code, out)
	eventually(t, "the barrier's reconcile started", func() bool { return s.started()[key] > before })
}

// The Done-when item "Disable and enable": edits while a kind is disabled
// are watched and indexed but not reconciled, and its resources say so;
// enabling it reconciles each of them once.
func TestE2EDisableAndEnableAKind(t *testing.T) {
	e := startFS(t, "-workers", "1")
	marker := newMarker()
	e.write(t, "mcpservers/gate.yaml", mcpServerYAML("gate", stdioSpec("-tools", marker)...))
	e.waitServer(t, "gate", "is Running", running("x_gate_"+marker))
	gate := events.NewKey(v1alpha1.KindMCPServer, "", "gate")
	for _, name := range []string{"one", "two"} {
		e.write(t, "workflows/"+name+".yaml", workflowYAML(name, "x_gate_"+marker))
		e.waitWorkflow(t, name, "Synced", "x_gate_"+marker)
	}
	stream := e.stream(t, events.TypeReconciliationStarted, controls.TypeReconciliationToggled)

	out, code := e.cli(t, "disable", "workflows")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "workflows: reconciliation disabled (2 resources)")
	eventually(t, "the toggle is on the event stream", func() bool {
		stream.mu.Lock()
		defer stream.mu.Unlock()
		for _, ev := range stream.events {
			if tg, ok := ev.(controls.ReconciliationToggled); ok && tg.Kind == v1alpha1.KindWorkflow && !tg.Enabled {
				return true
			}
		}
		return false
	})

	// Two edits and a new workflow, all indexed.
	e.write(t, "workflows/one.yaml", workflowYAML("one", "x_gate_edited1"))
	e.write(t, "workflows/two.yaml", workflowYAML("two", "x_gate_edited2"))
	e.write(t, "workflows/three.yaml", workflowYAML("three", "x_gate_"+marker))
	for name, tool := range map[string]string{"one": "x_gate_edited1", "two": "x_gate_edited2", "three": "x_gate_" + marker} {
		eventually(t, "workflow "+name+"'s edit is indexed", func() bool {
			r, ok := e.resource(t, "workflows", name)
			return ok && len(r.Spec.Steps) == 1 && r.Spec.Steps[0].Tool == tool
		})
	}
	// A resync skips the disabled kind.
	out, code = e.cli(t, "resync", "workflows")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "skipped, reconciliation disabled: Workflow")
	e.barrier(t, stream, gate)
	for _, name := range []string{"one", "two", "three"} {
		key := events.NewKey(v1alpha1.KindWorkflow, "", name)
		assert.Zero(t, stream.started()[key], "%s was reconciled while its kind was disabled", name)
		var r struct {
			Metadata  struct{ Hash string }
			Reconcile struct{ State, ObservedHash, Note string }
		}
		_, body := e.get(t, "/api/v1/resources/workflows/default/"+name)
		require.NoError(t, json.Unmarshal([]byte(body), &r))
		assert.Equal(t, controls.NoteDisabled, r.Reconcile.Note)
		assert.NotEqual(t, r.Metadata.Hash, r.Reconcile.ObservedHash, "%s's edit is not reconciled", name)
	}
	out, code = e.cli(t, "status")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Workflow reconciliation disabled (3)")
	out, code = e.cli(t, "describe", "workflows/one")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `Note:\s+reconciliation disabled`, out)
	out, code = e.cli(t, "get", "workflows", "three")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Pending (reconciliation disabled)")
	for _, name := range []string{"one", "three"} {
		eventually(t, "workflow "+name+"'s status file says reconciliation is disabled", func() bool {
			data, ok := e.statusFile(name)
			return ok && strings.Contains(data, "reconciliationDisabled: true")
		})
	}

	out, code = e.cli(t, "enable", "workflows")
	require.Equal(t, 0, code, out)
	for _, name := range []string{"one", "two", "three"} {
		eventually(t, "workflow "+name+"'s edit is reconciled", func() bool {
			var r struct {
				Metadata  struct{ Hash string }
				Reconcile struct{ ObservedHash, Note string }
			}
			_, body := e.get(t, "/api/v1/resources/workflows/default/"+name)
			return json.Unmarshal([]byte(body), &r) == nil && r.Reconcile.ObservedHash == r.Metadata.Hash && r.Reconcile.Note == ""
		})
	}
	eventually(t, "the status file no longer says reconciliation is disabled", func() bool {
		data, ok := e.statusFile("one")
		return ok && strings.Contains(data, "state: Synced") && !strings.Contains(data, "reconciliationDisabled")
	})
	e.barrier(t, stream, gate)
	for _, name := range []string{"one", "two", "three"} {
		assert.Equal(t, 1, stream.started()[events.NewKey(v1alpha1.KindWorkflow, "", name)], "%s is reconciled once on enable", name)
	}
}

// The overview on the API, and the initial disabled set from the flag.
func TestE2EOverviewAndTheInitialDisabledSet(t *testing.T) {
	e := startFS(t, "-disable-kinds", "wf")
	marker := newMarker()
	e.write(t, "workflows/held.yaml", workflowYAML("held", "x_none_tool"))
	eventually(t, "the held workflow's status file says reconciliation is disabled", func() bool {
		data, ok := e.statusFile("held")
		return ok && strings.Contains(data, "state: Pending") && strings.Contains(data, "reconciliationDisabled: true")
	})
	e.write(t, "mcpservers/seen.yaml", mcpServerYAML("seen", stdioSpec("-tools", marker+",b")...))
	e.waitServer(t, "seen", "is Running", running("x_seen_"+marker, "x_seen_b"))
	code, body := e.get(t, "/api/v1/overview")
	require.Equal(t, http.StatusOK, code, body)
	var o controls.Overview
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	assert.Equal(t, "filesystem", o.Mode)
	assert.Equal(t, "leader", o.Role)
	assert.Equal(t, []string{v1alpha1.KindMCPServer}, o.EnabledKinds)
	assert.Equal(t, map[string]int{"Synced": 1, "Pending": 1}, o.Resources)
	assert.Equal(t, map[string]int{"Running": 1}, o.Servers)
	assert.Equal(t, 2, o.Tools)
	assert.Nil(t, o.LastFullResync)
	out, code := e.cli(t, "resync")
	require.Equal(t, 0, code, out)
	_, body = e.get(t, "/api/v1/overview")
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	require.NotNil(t, o.LastFullResync)
	assert.WithinDuration(t, time.Now(), *o.LastFullResync, time.Minute)
}

// Every control that changes something needs the token, on the API and
// the CLI; the overview is for anyone who can read the API.
func TestE2EControlsNeedTheToken(t *testing.T) {
	e := startFS(t, "-api-token", controlsToken)
	e.write(t, "workflows/w.yaml", workflowYAML("w", "x_none_tool"))
	e.waitWorkflow(t, "w", "Synced", "x_none_tool")
	post := func(path, token string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+e.addr+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/api/v1/services/default/x/stop", "/api/v1/services/default/x/start", "/api/v1/services/default/x/restart",
		"/api/v1/kinds/workflows/disable", "/api/v1/kinds/workflows/enable", "/api/v1/resync", "/api/v1/resync?kind=workflows"} {
		assert.Equal(t, http.StatusUnauthorized, post(path, ""), path)
		assert.Equal(t, http.StatusUnauthorized, post(path, "wrong-"+controlsToken), path)
	}
	for _, args := range [][]string{{"disable", "workflows"}, {"resync"}, {"start", "x"}, {"restart", "x"}} {
		out, code := e.cli(t, args...)
		assert.Equal(t, 1, code, "%v: %s", args, out)
		assert.Contains(t, out, "a valid bearer token is required", "%v", args)
	}
	// MCP: without the token no session, so no core_*_create, no
	// core_service_stop.
	cs, err := dialMCP("http://"+e.addr+"/mcp", mcpDial{version: "2024-11-05"})
	if cs != nil {
		_ = cs.Close()
	}
	require.Error(t, err, "an MCP session without the token")
	assert.Contains(t, err.Error(), "Unauthorized")

	code, body := e.get(t, "/api/v1/overview")
	require.Equal(t, http.StatusOK, code, body)
	var o controls.Overview
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	assert.Equal(t, []string{v1alpha1.KindMCPServer, v1alpha1.KindWorkflow}, o.EnabledKinds, "no refused request disabled anything")
	assert.Nil(t, o.LastFullResync, "no refused request resynced")

	// With the token: a service that is not declared is a 404, an unknown
	// kind too.
	assert.Equal(t, http.StatusNotFound, post("/api/v1/services/default/x/stop", controlsToken))
	assert.Equal(t, http.StatusNotFound, post("/api/v1/kinds/gadgets/disable", controlsToken))
	assert.Equal(t, http.StatusNotFound, post("/api/v1/services/default/x/explode", controlsToken))
}
