package main

// End-to-end tests of the real reconcilers: the real musterd binary runs
// real MCP servers (bin/mcp-fake, and a remote one the test starts), driven
// only through files, the HTTP API and the CLI. Processes are inspected
// from outside, through /proc: each server gets a unique marker among its
// args, so a test finds its processes and no one else's.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// newMarker returns a tool name no other process on the machine uses, to
// tell a test's server processes by their command line.
func newMarker() string { return fmt.Sprintf("mk%016x", rand.Uint64()) }

// fakeServer is the absolute path of the mcp-fake that TestMain built.
func fakeServer() string { return filepath.Join(workDir, "bin", "mcp-fake") }

// yamlValue spells v as a YAML flow value (JSON is YAML).
func yamlValue(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// mcpServerYAML declares an MCPServer with the given spec lines.
func mcpServerYAML(name string, spec ...string) string {
	return fmt.Sprintf("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: %s\nspec:\n  %s\n",
		name, strings.Join(spec, "\n  "))
}

// stdioSpec is the spec of an mcp-fake server musterd starts at once.
func stdioSpec(args ...string) []string {
	return []string{"type: stdio", "autoStart: true", "command: " + yamlValue(fakeServer()), "args: " + yamlValue(args)}
}

// serverObject is what the API returns for one MCPServer.
type serverObject struct {
	Spec      v1alpha1.MCPServerSpec   `json:"spec"`
	Status    v1alpha1.MCPServerStatus `json:"status"`
	Reconcile types.Reconcile          `json:"reconcile"`
}

func (e *fsEnv) server(t *testing.T, name string) (serverObject, bool) {
	t.Helper()
	return getObject[serverObject](t, e, "mcpservers", name)
}

// waitServer polls the MCPServer until cond holds, and returns it.
func (e *fsEnv) waitServer(t *testing.T, name, what string, cond func(serverObject) bool) serverObject {
	t.Helper()
	var last serverObject
	defer func() {
		if t.Failed() {
			// Not musterd's log: its reader goroutine is still writing it.
			t.Logf("mcpserver %s, last seen: %+v", name, last)
		}
	}()
	eventually(t, "mcpserver "+name+" "+what, func() bool {
		s, ok := e.server(t, name)
		last = s
		return ok && cond(s)
	})
	return last
}

// running holds for a server Running with the tools want (in any order),
// Synced.
func running(want ...string) func(serverObject) bool {
	want = slices.Sorted(slices.Values(want))
	return func(s serverObject) bool {
		return s.Reconcile.State == "Synced" && s.Status.State == v1alpha1.MCPServerStateRunning && slices.Equal(s.Status.Tools, want)
	}
}

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid, pgrp int
	state           string
	// start is the process's start time in clock ticks since boot: with
	// the pid, it names one process even when pids are reused.
	start uint64
	args  []string
}

// readProc reads /proc/<pid>; false if there is no such process.
func readProc(pid int) (proc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime …; comm may hold spaces and parentheses.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, state: fields[0]}
	p.ppid, _ = strconv.Atoi(fields[1])
	p.pgrp, _ = strconv.Atoi(fields[2])
	p.start, _ = strconv.ParseUint(fields[19], 10, 64)
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.args = strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	return p, true
}

// processes lists every live process (zombies, already dead, excluded).
func processes() []proc {
	entries, _ := os.ReadDir("/proc")
	var ps []proc
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != "Z" {
			ps = append(ps, p)
		}
	}
	return ps
}

// serverProcs returns the live processes with marker in one of their args.
func serverProcs(marker string) []proc {
	var found []proc
	for _, p := range processes() {
		if slices.ContainsFunc(p.args, func(arg string) bool { return strings.Contains(arg, marker) }) {
			found = append(found, p)
		}
	}
	return found
}

// theServerProc waits until exactly one process carries marker, other than
// those in not, and returns it.
func theServerProc(t *testing.T, marker string, not ...proc) proc {
	t.Helper()
	var found []proc
	eventually(t, "one server process carries "+marker, func() bool {
		found = slices.DeleteFunc(serverProcs(marker), func(p proc) bool { return slices.ContainsFunc(not, p.same) })
		return len(found) == 1
	})
	return found[0]
}

// same reports whether q is the very process p (same pid, same start).
func (p proc) same(q proc) bool { return p.pid == q.pid && p.start == q.start }

// alive reports whether the process p still runs (not a zombie).
func (p proc) alive() bool {
	q, ok := readProc(p.pid)
	return ok && q.state != "Z" && p.same(q)
}

func pids(ps []proc) []int {
	ids := make([]int, len(ps))
	for i, p := range ps {
		ids[i] = p.pid
	}
	return ids
}

// descendants returns every live process under pid.
func descendants(pid int) []proc {
	all := processes()
	var found []proc
	parents := []int{pid}
	for len(parents) > 0 {
		parent := parents[0]
		parents = parents[1:]
		for _, p := range all {
			if p.ppid == parent {
				found = append(found, p)
				parents = append(parents, p.pid)
			}
		}
	}
	return found
}

// A stdio server is exec'd directly (no shell between), as musterd's child
// in a process group of its own, and runs with its tools exposed as
// x_{toolPrefix}_{tool}.
func TestE2EStdioServerRunsWithItsTools(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/echo.yaml", mcpServerYAML("echo", append(stdioSpec("-tools", "echo,add,"+marker), "toolPrefix: ec")...))

	s := e.waitServer(t, "echo", "is Running with its tools", running("x_ec_add", "x_ec_echo", "x_ec_"+marker))
	assert.Equal(t, 3, s.Status.ToolCount)
	assert.NotNil(t, s.Status.LastConnected)
	assert.Zero(t, s.Status.RestartCount)
	assert.Empty(t, s.Status.LastError)

	p := theServerProc(t, marker)
	assert.Equal(t, []string{fakeServer(), "-tools", "echo,add," + marker}, p.args, "exec'd directly with its args")
	assert.Equal(t, e.cmd.Process.Pid, p.ppid, "a child of musterd")
	assert.Equal(t, p.pid, p.pgrp, "the leader of its own process group")

	out, code := e.cli(t, "get", "mcps", "echo")
	assert.Equal(t, 0, code, out)
	assert.Regexp(t, `(?m)^echo\s+stdio\s+Running\s+Synced\s`, out)
}

// startRemoteServer runs mcp-fake serving HTTP as the test's child, until
// the test ends, and returns its streamable-http URL.
func startRemoteServer(t *testing.T, tools string) string {
	t.Helper()
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", tools)
	return url
}

// Remote servers are connected to, not started: Connected with their
// tools, over streamable HTTP and over SSE.
func TestE2ERemoteServersConnected(t *testing.T) {
	url := startRemoteServer(t, "fetch,search")
	e := startFS(t)
	e.write(t, "mcpservers/remote.yaml", mcpServerYAML("remote", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10"))
	e.write(t, "mcpservers/legacy.yaml", mcpServerYAML("legacy", "type: sse", "autoStart: true", "url: "+yamlValue(strings.TrimSuffix(url, "/mcp")+"/sse"), "timeout: 10"))

	for _, name := range []string{"remote", "legacy"} {
		s := e.waitServer(t, name, "is Connected with its tools", func(s serverObject) bool {
			return s.Reconcile.State == "Synced" && s.Status.State == v1alpha1.MCPServerStateConnected &&
				slices.Equal(s.Status.Tools, []string{"x_" + name + "_fetch", "x_" + name + "_search"})
		})
		assert.NotNil(t, s.Status.LastConnected, name)
		assert.Equal(t, 2, s.Status.ToolCount, name)
	}
	assert.Empty(t, descendants(e.cmd.Process.Pid), "a remote server is no process of musterd's")
}

// A spec change that matters restarts the server with the new spec (a new
// process, the new args in effect); a new description restarts nothing.
func TestE2ESpecChangeRestartsTheServer(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/s.yaml", mcpServerYAML("s", stdioSpec("-tools", "echo,"+marker)...))
	e.waitServer(t, "s", "is Running", running("x_s_echo", "x_s_"+marker))
	first := theServerProc(t, marker)

	e.write(t, "mcpservers/s.yaml", mcpServerYAML("s", stdioSpec("-tools", "echo,other,"+marker)...))
	e.waitServer(t, "s", "is Running with the new tools", running("x_s_echo", "x_s_other", "x_s_"+marker))
	second := theServerProc(t, marker)
	assert.NotEqual(t, first.pid, second.pid, "a new process")
	assert.False(t, first.alive(), "the old process is stopped")
	assert.Equal(t, []string{fakeServer(), "-tools", "echo,other," + marker}, second.args)

	e.write(t, "mcpservers/s.yaml", mcpServerYAML("s", append(stdioSpec("-tools", "echo,other,"+marker), "description: changed")...))
	e.waitServer(t, "s", "has the new description in force, Synced", func(s serverObject) bool {
		return s.Spec.Description == "changed" && s.Reconcile.State == "Synced" && s.Reconcile.LastReconcileTime != nil
	})
	// The reconcile of the new description is over: had it restarted the
	// server, the process would be another by now.
	e.waitServer(t, "s", "is Running", running("x_s_echo", "x_s_other", "x_s_"+marker))
	assert.True(t, second.alive(), "a new description restarts nothing")
	assert.Equal(t, []int{second.pid}, pids(serverProcs(marker)))
}

// autoStart: false declares a server without starting it; turning it on
// starts it, which shows that the test would see the process.
func TestE2EAutoStartFalseKeepsTheServerStopped(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	spec := stdioSpec("-tools", marker)
	spec[1] = "autoStart: false"
	e.write(t, "mcpservers/idle.yaml", mcpServerYAML("idle", spec...))
	s := e.waitServer(t, "idle", "is Stopped and Synced", func(s serverObject) bool {
		return s.Reconcile.State == "Synced" && s.Status.State == v1alpha1.MCPServerStateStopped
	})
	assert.Empty(t, s.Status.Tools)
	assert.Empty(t, serverProcs(marker), "no process for a server that is not started")
	assert.Empty(t, descendants(e.cmd.Process.Pid))

	e.write(t, "mcpservers/idle.yaml", mcpServerYAML("idle", stdioSpec("-tools", marker)...))
	e.waitServer(t, "idle", "is Running", running("x_idle_"+marker))
	p := theServerProc(t, marker)

	e.write(t, "mcpservers/idle.yaml", mcpServerYAML("idle", spec...))
	e.waitServer(t, "idle", "is Stopped again", func(s serverObject) bool {
		return s.Reconcile.State == "Synced" && s.Status.State == v1alpha1.MCPServerStateStopped
	})
	assert.False(t, p.alive(), "autoStart turned off stops the process")
}

// Deleting the definition stops the process and forgets the server.
func TestE2EDeleteStopsTheProcess(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/gone.yaml", mcpServerYAML("gone", stdioSpec("-tools", marker)...))
	e.waitServer(t, "gone", "is Running", running("x_gone_"+marker))
	p := theServerProc(t, marker)

	e.remove(t, "mcpservers/gone.yaml")
	eventually(t, "the server is gone from the API", func() bool {
		_, ok := e.server(t, "gone")
		return !ok
	})
	eventually(t, "its process is gone", func() bool { return !p.alive() })
	assert.Empty(t, serverProcs(marker))
	assert.Empty(t, descendants(e.cmd.Process.Pid))
}

// A server that exits at once is Failed with its exit code and stderr tail,
// and each restart waits longer than the one before: the delay between a
// failure and the retry it schedules grows with the failure streak.
func TestE2ECrashingServerFailsWithItsStderrAndBacksOff(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/crash.yaml", mcpServerYAML("crash", stdioSpec("-exit-at-once", "-tools", marker)...))

	// The delay of each failure: nextRetry (when the coordinator retries,
	// as the supervisor's nextRetryAfter says) less the end of the reconcile
	// that failed. The API's reconcile times have nanoseconds; a reading
	// may pair a new failure count with the previous reconcile, whose delay
	// is shorter, so the longest reading per count is the one.
	delays := map[int]time.Duration{}
	var last serverObject
	eventually(t, "three failures in a row", func() bool {
		s, ok := e.server(t, "crash")
		if !ok || s.Status.State != v1alpha1.MCPServerStateFailed {
			return false
		}
		last = s
		n := s.Status.ConsecutiveFailures
		if r := s.Reconcile; r.NextRetry != nil && r.LastReconcileTime != nil {
			delays[n] = max(delays[n], r.NextRetry.Sub(*r.LastReconcileTime))
		}
		return n >= 3 && delays[3] > 0
	})
	t.Logf("restart delays by failure count: %v", delays)
	assert.Contains(t, last.Status.LastError, "exit code 3")
	assert.Contains(t, last.Status.LastError, "mcp-fake: exiting at once as asked, exit code 3", "the stderr tail")
	assert.Zero(t, last.Status.RestartCount, "failed starts are failures, not restarts: no process of it ever ran")
	require.NotNil(t, last.Status.NextRetryAfter)
	require.NotNil(t, last.Status.LastAttempt)
	assert.False(t, last.Status.NextRetryAfter.Before(last.Status.LastAttempt))
	require.Contains(t, delays, 1)
	require.Contains(t, delays, 2)
	assert.Truef(t, delays[1] < delays[2] && delays[2] < delays[3], "each delay is longer than the one before: %v", delays)
	assert.Empty(t, serverProcs(marker), "a crashed server leaves no process")
}

// A server that never answers initialize is killed when its timeout runs
// out, and shows Failed with the timeout.
func TestE2EServerHangingOnInitializeTimesOutIntoFailed(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/hang.yaml", mcpServerYAML("hang", append(stdioSpec("-hang-on-initialize", "-tools", marker), "timeout: 2")...))
	p := theServerProc(t, marker)
	s := e.waitServer(t, "hang", "is Failed", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateFailed
	})
	assert.Contains(t, s.Status.LastError, "did not answer initialize and tools/list within 2s")
	assert.Contains(t, s.Status.LastError, "mcp-fake: hanging on initialize as asked", "the stderr tail")
	// The start fails only once its process is reaped; a retry after the
	// backoff starts another process, so the check is on this one.
	assert.False(t, p.alive(), "the hanging process is killed")
}

// A server killed from outside is noticed and restarted.
func TestE2EKilledServerIsRestarted(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/victim.yaml", mcpServerYAML("victim", stdioSpec("-tools", marker)...))
	e.waitServer(t, "victim", "is Running", running("x_victim_"+marker))
	first := theServerProc(t, marker)

	require.NoError(t, proctest.Kill(first.pid))
	s := e.waitServer(t, "victim", "is Running again after a restart", func(s serverObject) bool {
		return running("x_victim_"+marker)(s) && s.Status.RestartCount >= 1
	})
	assert.Empty(t, s.Status.LastError, "running again: nothing wrong now")
	assert.Contains(t, s.Status.LastFailure, "killed by signal 9", "the crash is what the status says happened")
	second := theServerProc(t, marker, first)
	assert.NotEqual(t, first.pid, second.pid)
	assert.False(t, first.alive())
	assert.Equal(t, e.cmd.Process.Pid, second.ppid)
}

// SIGTERM to musterd stops every server it started, one that ignores
// SIGTERM included, before musterd exits 0: no child outlives it.
func TestE2ESIGTERMLeavesNoChildProcess(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/a.yaml", mcpServerYAML("a", stdioSpec("-tools", "a,"+marker)...))
	e.write(t, "mcpservers/b.yaml", mcpServerYAML("b", stdioSpec("-tools", "b,"+marker)...))
	e.write(t, "mcpservers/stubborn.yaml", mcpServerYAML("stubborn", stdioSpec("-ignore-sigterm", "-tools", "c,"+marker)...))
	e.waitServer(t, "a", "is Running", running("x_a_a", "x_a_"+marker))
	e.waitServer(t, "b", "is Running", running("x_b_b", "x_b_"+marker))
	e.waitServer(t, "stubborn", "is Running", running("x_stubborn_c", "x_stubborn_"+marker))

	children := descendants(e.cmd.Process.Pid)
	assert.ElementsMatch(t, pids(serverProcs(marker)), pids(children), "musterd's children are its three servers")
	require.Len(t, children, 3)

	e.stopWith(t, syscall.SIGTERM, e2eDeadline)
	for _, p := range children {
		assert.False(t, p.alive(), "pid %d %q outlived musterd", p.pid, p.args)
	}
	assert.Empty(t, serverProcs(marker))
	// The stubborn server was killed: after its grace, or at the shutdown's
	// deadline (both 5 s by default, so either comes first).
	assert.Regexp(t, `mcp server outlived its grace after SIGTERM; killed it|shutdown: servers killed`, e.stderr.String())
}

// workflowStatus is what the API returns of a Workflow's status.
type workflowStatus struct {
	Status    v1alpha1.WorkflowStatus `json:"status"`
	Reconcile types.Reconcile         `json:"reconcile"`
}

// A workflow naming tools no server offers is reconciled (Synced) but
// invalid, naming each missing tool and its step; it becomes valid with no
// edit once a server offering them starts, and invalid again once that
// server is gone: the catalogue's changes reach workflows through the bus.
func TestE2EWorkflowBecomesValidWhenAServerOffersItsTools(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/greet.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
spec:
  steps:
    - id: say
      tool: x_greeter_hello
    - id: fan
      parallel:
        - id: a
          tool: x_greeter_wave
`)
	get := func() workflowStatus {
		code, body := e.get(t, "/api/v1/resources/workflows/default/greet")
		if code == 404 {
			return workflowStatus{}
		}
		require.Equal(t, 200, code, body)
		var w workflowStatus
		require.NoError(t, json.Unmarshal([]byte(body), &w), body)
		return w
	}
	invalid := v1alpha1.WorkflowStatus{
		ValidationErrors: []string{
			"step say: tool x_greeter_hello is not offered by any running server",
			"step fan.a: tool x_greeter_wave is not offered by any running server",
		},
		ReferencedTools: []string{"x_greeter_hello", "x_greeter_wave"},
		MissingTools:    []string{"x_greeter_hello", "x_greeter_wave"},
		StepCount:       2,
	}
	withoutConditions := func(s v1alpha1.WorkflowStatus) v1alpha1.WorkflowStatus {
		s.Conditions = nil
		return s
	}
	var w workflowStatus
	eventually(t, "the workflow is Synced and invalid", func() bool {
		w = get()
		return w.Reconcile.State == "Synced" && w.Status.StepCount == 2
	})
	assert.Equal(t, invalid, withoutConditions(w.Status))
	definition, err := os.ReadFile(filepath.Join(e.config, "workflows", "greet.yaml"))
	require.NoError(t, err)

	e.write(t, "mcpservers/greeter.yaml", mcpServerYAML("greeter", stdioSpec("-tools", "hello,wave")...))
	eventually(t, "the workflow is valid with its tools offered", func() bool {
		w = get()
		// While greeter starts the workflow waits for it: no validation
		// error, not valid yet, its tools still missing.
		return w.Reconcile.State == "Synced" && w.Status.Valid && len(w.Status.MissingTools) == 0
	})
	assert.Equal(t, v1alpha1.WorkflowStatus{Valid: true, ReferencedTools: invalid.ReferencedTools, StepCount: 2}, withoutConditions(w.Status))
	after, err := os.ReadFile(filepath.Join(e.config, "workflows", "greet.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(definition), string(after), "the workflow was not edited")

	e.remove(t, "mcpservers/greeter.yaml")
	eventually(t, "the workflow is invalid again", func() bool {
		w = get()
		return w.Reconcile.State == "Synced" && !w.Status.Valid
	})
	assert.Equal(t, invalid, withoutConditions(w.Status))
}

func TestE2EAMalformedEditNeverStopsARunningServer(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	good := mcpServerYAML("steady", stdioSpec("-tools", marker)...)
	e.write(t, "mcpservers/steady.yaml", good)
	e.waitServer(t, "steady", "is Running", running("x_steady_"+marker))
	server := theServerProc(t, marker)

	// Each broken edit, from the good file, with the error it must show.
	for _, c := range []struct{ what, content, shows string }{
		{"an unknown field", strings.Replace(good, "command:", "comand:", 1), "comand"},
		{"invalid YAML", "spec: [\n", "mcpservers/steady.yaml:"},
		{"another kind", strings.Replace(good, "kind: MCPServer", "kind: Workflow", 1), "does not belong in mcpservers/"},
		{"an empty file", "", "is empty"},
		{"a failed validation", strings.Replace(good, "type: stdio", "type: carrier-pigeon", 1), "carrier-pigeon"},
	} {
		e.write(t, "mcpservers/steady.yaml", c.content)
		s := e.waitServer(t, "steady", "shows the error of "+c.what, func(s serverObject) bool {
			return s.Reconcile.State == "Error" && strings.Contains(s.Reconcile.LastError, c.shows)
		})
		assert.Equal(t, v1alpha1.MCPServerStateRunning, s.Status.State, "%s: the last good server keeps running", c.what)
		assert.True(t, server.alive(), "%s stopped the running server", c.what)
		assert.Equal(t, []proc{server}, serverProcs(marker), "%s restarted the server", c.what)

		e.write(t, "mcpservers/steady.yaml", good)
		e.waitServer(t, "steady", "is Synced again after "+c.what, running("x_steady_"+marker))
		assert.Equal(t, []proc{server}, serverProcs(marker), "fixing %s restarts nothing", c.what)
	}
}
