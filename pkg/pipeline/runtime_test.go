package pipeline_test

// Integration tests of the runtime side: the filesystem watcher, the index,
// the pipeline, the real reconcilers, the supervisor running real mcp-fake
// processes, the runtime bridge and the catalogue, all wired as musterd
// wires them. Real processes cannot live in a synctest bubble, so these
// run in real time and poll, with generous deadlines, for what must come.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/proctest"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/supervisor"
	"github.com/musterd/musterd/pkg/watchers/fs"
	"github.com/musterd/musterd/pkg/watchers/supervised"
)

// fakeBin is cmd/mcp-fake, built once for the test binary.
var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

// waitLimit bounds every wait for a real process or a reconcile: generous,
// for a loaded 2-core machine running the race detector.
const waitLimit = 20 * time.Second

// daemon is the pipeline wired as musterd wires it, on a config dir of its
// own.
type daemon struct {
	t    testing.TB
	dir  string
	p    *pipeline.Pipeline
	sup  *supervisor.Supervisor
	cat  *catalogue.Catalogue
	done chan error
	stop context.CancelFunc

	mu      sync.Mutex
	changes map[events.Key][]supervisor.Observed // every OnChange, in order
	order   []string                             // every OnChangeSync, across servers, in order: "name state"
	changed chan struct{}                        // capacity 1: a change was recorded
	procs   map[int]int                          // pid → pidfd of every server process, or -1: reaped before it was seen
}

func startDaemon(t testing.TB, backoff supervisor.Backoff, files map[string]string) *daemon {
	d := &daemon{t: t, dir: t.TempDir(), changes: map[events.Key][]supervisor.Observed{}, changed: make(chan struct{}, 1), procs: map[int]int{}}
	for rel, content := range files {
		d.write(rel, content)
	}
	log := slog.New(slog.DiscardHandler)
	index := resources.New()
	d.cat = catalogue.New(catalogue.Options{})

	// The wiring the daemon needs, in this order: the pipeline (for its
	// bus), the bridge, the supervisor reporting to the bridge, the
	// reconcilers over both, then the components.
	var err error
	d.p, err = pipeline.New(pipeline.Options{
		Logger:      log,
		Debouncer:   debouncer.Options{Interval: 50 * time.Millisecond},
		Coordinator: coordinator.Options{ResyncPeriod: -1},
		Lifecycle:   lifecycle.Options{StopTimeout: waitLimit},
	})
	require.NoError(t, err)
	bridge, err := supervised.New(d.p.Bus, supervised.Options{Index: index, Catalogue: d.cat, Logger: log})
	require.NoError(t, err)
	d.sup = supervisor.New(supervisor.Options{
		Logger:         log,
		RestartBackoff: backoff,
		OnChange: func(k events.Key, o supervisor.Observed) {
			d.mu.Lock()
			d.changes[k] = append(d.changes[k], o)
			d.mu.Unlock()
			select {
			case d.changed <- struct{}{}:
			default:
			}
		},
		OnChangeSync: func(k events.Key, o supervisor.Observed) {
			d.track(o.PID)
			d.note(k, o)
			bridge.OnChange(k, o)
		},
	})
	require.NoError(t, d.p.Reconcilers.Register(mcpserver.New(index, d.sup, d.cat)))
	require.NoError(t, d.p.Reconcilers.Register(workflow.New(index, d.cat)))
	require.NoError(t, d.p.Components.Register(supervised.NewStopper(d.sup, supervised.StopperOptions{})))
	require.NoError(t, d.p.Add(bridge))
	watcher, err := fs.New(d.p.Bus, fs.Options{ConfigDir: d.dir, Index: index, RescanInterval: -1, Logger: log})
	require.NoError(t, err)
	require.NoError(t, d.p.Add(watcher, lifecycle.Critical()))

	ctx, cancel := context.WithCancel(context.Background())
	d.stop, d.done = cancel, make(chan error, 1)
	go func() { d.done <- d.p.Run(ctx) }()
	// Cleanups run last-registered first: the pidfds close after the
	// shutdown below has checked through them that every server is gone.
	t.Cleanup(d.closePidfds)
	t.Cleanup(func() {
		if d.stop != nil {
			d.shutdown()
		}
	})
	return d
}

// note records a change in the order of all changes: "launched" for the
// start of a start (Starting with its LastAttempt), else its state.
func (d *daemon) note(k events.Key, o supervisor.Observed) {
	what := string(o.State)
	if o.State == v1alpha1.MCPServerStateStarting && !o.LastAttempt.IsZero() {
		what = "launched"
	}
	d.mu.Lock()
	d.order = append(d.order, k.Name+" "+what)
	d.mu.Unlock()
}

// orderOf returns every change noted so far, in order.
func (d *daemon) orderOf() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.order)
}

// shutdown stops the pipeline and checks that no server it started
// outlived it.
func (d *daemon) shutdown() {
	d.stop()
	d.stop = nil
	require.NoError(d.t, <-d.done)
	for _, pid := range d.pids() {
		assert.True(d.t, d.gone(pid), "pid %d outlived the pipeline", pid)
		assert.True(d.t, d.groupGone(pid), "process group %d outlived the pipeline", pid)
	}
}

// write puts a file into the config dir the way an editor saving
// atomically does.
func (d *daemon) write(rel, content string) {
	path := filepath.Join(d.dir, rel)
	require.NoError(d.t, os.MkdirAll(filepath.Dir(path), 0o755))
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	require.NoError(d.t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(d.t, os.Rename(tmp, path))
}

func (d *daemon) remove(rel string) { require.NoError(d.t, os.Remove(filepath.Join(d.dir, rel))) }

// pids returns every process any server ran.
func (d *daemon) pids() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	pids := make([]int, 0, len(d.procs))
	for pid := range d.procs {
		pids = append(pids, pid)
	}
	return pids
}

func (d *daemon) changesOf(k events.Key) []supervisor.Observed {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.changes[k])
}

func (d *daemon) serverStatus(k events.Key) (v1alpha1.MCPServerStatus, bool) {
	st, ok := d.p.Reconcilers.Status(k)
	if !ok {
		return v1alpha1.MCPServerStatus{}, false
	}
	return st.(v1alpha1.MCPServerStatus), true
}

func (d *daemon) workflowStatus(k events.Key) (v1alpha1.WorkflowStatus, bool) {
	st, ok := d.p.Reconcilers.Status(k)
	if !ok {
		return v1alpha1.WorkflowStatus{}, false
	}
	return st.(v1alpha1.WorkflowStatus), true
}

func (d *daemon) reconcileState(k events.Key) statusync.State {
	st, _ := d.p.Store.Get(k)
	return st.State
}

// waitServer polls until key's status satisfies ok, and returns it.
func (d *daemon) waitServer(k events.Key, what string, ok func(v1alpha1.MCPServerStatus) bool) v1alpha1.MCPServerStatus {
	d.t.Helper()
	var st v1alpha1.MCPServerStatus
	// The message is made in the condition: arguments to Eventually itself
	// are taken at the call, before any status was read.
	require.EventuallyWithT(d.t, func(c *assert.CollectT) {
		var found bool
		st, found = d.serverStatus(k)
		assert.True(c, found && ok(st), "%s: %s; last status %+v", k, what, st)
	}, waitLimit, 10*time.Millisecond)
	return st
}

// waitWorkflow polls until key is Synced and its status satisfies ok.
func (d *daemon) waitWorkflow(k events.Key, what string, ok func(v1alpha1.WorkflowStatus) bool) v1alpha1.WorkflowStatus {
	d.t.Helper()
	var st v1alpha1.WorkflowStatus
	require.EventuallyWithT(d.t, func(c *assert.CollectT) {
		var found bool
		st, found = d.workflowStatus(k)
		state := d.reconcileState(k)
		assert.True(c, found && ok(st) && state == statusync.StateSynced, "%s: %s; last status %+v, reconcile state %s", k, what, st, state)
	}, waitLimit, 10*time.Millisecond)
	return st
}

func (d *daemon) pid(k events.Key) int {
	obs, _ := d.sup.Get(k)
	return obs.PID
}

func serverYAML(name string, autoStart bool, extra string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: %s
spec:
  type: stdio
  autoStart: %t
  command: %s
  args: [%s]
  timeout: 20
%s`, name, autoStart, fakeBin, strings.Join(quoted, ", "), extra)
}

func workflowYAML(name, tool string) string {
	return fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: %s
spec:
  steps:
    - id: call
      tool: %s
`, name, tool)
}

func mcpKey(name string) events.Key { return events.NewKey(v1alpha1.KindMCPServer, "", name) }
func wfKey(name string) events.Key  { return events.NewKey(v1alpha1.KindWorkflow, "", name) }

func running(st v1alpha1.MCPServerStatus) bool { return st.State == v1alpha1.MCPServerStateRunning }

func TestServersAndWorkflowsFollowTheFilesAndWhatRuns(t *testing.T) {
	t.Parallel()
	echo, idle, extra := mcpKey("echo"), mcpKey("idle"), mcpKey("extra")
	greet, ping := wfKey("greet"), wfKey("ping")
	d := startDaemon(t, supervisor.Backoff{Base: 100 * time.Millisecond}, map[string]string{
		"mcpservers/echo.yaml": serverYAML("echo", true, "  toolPrefix: echo\n", "-tools", "echo,reverse"),
		"mcpservers/idle.yaml": serverYAML("idle", false, ""),
		"workflows/greet.yaml": workflowYAML("greet", "x_echo_echo"),
		"workflows/ping.yaml":  workflowYAML("ping", "x_extra_ping"),
	})

	// A stdio server Running with its exposed tools.
	st := d.waitServer(echo, "Running", running)
	assert.Equal(t, []string{"x_echo_echo", "x_echo_reverse"}, st.Tools)
	assert.Equal(t, 2, st.ToolCount)
	first := d.pid(echo)
	require.NotZero(t, first)
	assert.False(t, d.gone(first))
	require.Eventually(t, func() bool { return d.reconcileState(echo) == statusync.StateSynced }, waitLimit, 10*time.Millisecond)

	// autoStart false: Stopped, no process.
	d.waitServer(idle, "Stopped", func(st v1alpha1.MCPServerStatus) bool { return st.State == v1alpha1.MCPServerStateStopped })
	_, known := d.sup.Get(idle)
	assert.False(t, known, "no process for a server that does not auto-start")
	assert.Empty(t, d.changesOf(idle))

	// Workflows: valid when their tool runs; Synced but invalid, naming
	// the tool, when it does not.
	d.waitWorkflow(greet, "valid", func(st v1alpha1.WorkflowStatus) bool { return st.Valid })
	wf := d.waitWorkflow(ping, "invalid", func(st v1alpha1.WorkflowStatus) bool { return !st.Valid })
	assert.Equal(t, []string{"x_extra_ping"}, wf.MissingTools)
	assert.Equal(t, []string{"step call: tool x_extra_ping is not offered by any running server"}, wf.ValidationErrors)

	// A server offering the tool starts: the workflow turns valid with no
	// edit of its own. It stops: invalid again, and its process is gone.
	d.write("mcpservers/extra.yaml", serverYAML("extra", true, "", "-tools", "ping"))
	d.waitWorkflow(ping, "valid once x_extra_ping is offered", func(st v1alpha1.WorkflowStatus) bool { return st.Valid && len(st.MissingTools) == 0 })
	extraPID := d.pid(extra)
	require.NotZero(t, extraPID)
	d.remove("mcpservers/extra.yaml")
	d.waitWorkflow(ping, "invalid once x_extra_ping is gone", func(st v1alpha1.WorkflowStatus) bool { return !st.Valid })
	require.Eventually(t, func() bool { _, ok := d.serverStatus(extra); return !ok && d.gone(extraPID) }, waitLimit, 10*time.Millisecond,
		"a deleted server is stopped and forgotten")
	assert.NotContains(t, d.sup.Keys(), extra, "the supervisor forgot it")

	// A spec change restarts with the new args: a new pid, the new tools.
	d.write("mcpservers/echo.yaml", serverYAML("echo", true, "  toolPrefix: echo\n", "-tools", "echo,reverse,shout"))
	st = d.waitServer(echo, "restarted with the new tools", func(st v1alpha1.MCPServerStatus) bool {
		return running(st) && slices.Contains(st.Tools, "x_echo_shout")
	})
	second := d.pid(echo)
	assert.NotEqual(t, first, second)
	assert.True(t, d.gone(first), "the old process is gone")
	assert.Equal(t, 1, st.RestartCount)
	assert.True(t, d.cat.Has("x_echo_shout"))

	// kill -9 is noticed, and the server restarted.
	require.NoError(t, proctest.Kill(second))
	st = d.waitServer(echo, "restarted after kill -9", func(st v1alpha1.MCPServerStatus) bool {
		return running(st) && st.RestartCount == 2
	})
	assert.Equal(t, 1, st.ConsecutiveFailures, "the kill counts until the server proves stable")
	assert.Empty(t, st.LastError, "running: nothing wrong now")
	assert.Contains(t, st.LastFailure, "was killed by signal 9", "the past failure is kept")
	require.NotNil(t, st.LastFailureTime)
	third := d.pid(echo)
	assert.NotEqual(t, second, third)
	var sawFailed bool
	for _, o := range d.changesOf(echo) {
		sawFailed = sawFailed || o.State == v1alpha1.MCPServerStateFailed
	}
	assert.True(t, sawFailed)
	d.waitWorkflow(greet, "valid again", func(st v1alpha1.WorkflowStatus) bool { return st.Valid })

	// Shutdown leaves no process.
	d.shutdown()
	assert.True(t, d.gone(third))
}

func TestACrashingServerFailsWithItsStderrAndRestartsNoFasterThanItsBackoff(t *testing.T) {
	t.Parallel()
	const base = 400 * time.Millisecond
	crashy, hang := mcpKey("crashy"), mcpKey("hang")
	d := startDaemon(t, supervisor.Backoff{Base: base, Max: time.Minute, Jitter: 0.1}, map[string]string{
		"mcpservers/crashy.yaml": serverYAML("crashy", true, "", "-exit-at-once", "-stderr-secret", "hunter2-token"),
		"mcpservers/hang.yaml":   strings.Replace(serverYAML("hang", true, "", "-hang-on-initialize"), "timeout: 20", "timeout: 1", 1),
	})

	// Four starts: the first at once, then after the backoff's delays.
	var attempts []time.Time
	require.Eventually(t, func() bool {
		attempts = attempts[:0]
		for _, o := range d.changesOf(crashy) {
			// Starting is reported when a start is asked for (with the
			// last attempt's time) and when it begins (with its own).
			if o.State == v1alpha1.MCPServerStateStarting && !o.LastAttempt.IsZero() && !slices.Contains(attempts, o.LastAttempt) {
				attempts = append(attempts, o.LastAttempt)
			}
		}
		return len(attempts) >= 4
	}, waitLimit, 10*time.Millisecond, "four starts")
	var gaps []time.Duration
	for i := 1; i < 4; i++ {
		gap := attempts[i].Sub(attempts[i-1])
		gaps = append(gaps, gap)
		assert.GreaterOrEqual(t, gap, base<<(i-1), "start %d came %s after the one before; the backoff allows no less", i+1, gap)
	}
	assert.Less(t, gaps[0], gaps[1], "the delays grow")
	assert.Less(t, gaps[1], gaps[2], "the delays grow")

	st := d.waitServer(crashy, "Failed", func(st v1alpha1.MCPServerStatus) bool {
		return st.State == v1alpha1.MCPServerStateFailed && st.ConsecutiveFailures >= 4
	})
	assert.Contains(t, st.LastError, "exited with exit code 3")
	assert.Contains(t, st.LastError, "mcp-fake: exiting at once as asked, exit code 3", "the stderr tail")
	assert.Contains(t, st.LastError, "password=[redacted]")
	assert.NotContains(t, st.LastError, "hunter2-token")
	require.NotNil(t, st.NextRetryAfter)
	assert.Empty(t, st.Tools)

	// The reconcile state shows the failure, and its next retry is when
	// the server's backoff ends. (Two clocks' readings, the supervisor's
	// and the coordinator's, can differ by nanoseconds.)
	require.Eventually(t, func() bool {
		rs, _ := d.p.Store.Get(crashy)
		st, _ := d.serverStatus(crashy)
		return rs.State == statusync.StateError && st.NextRetryAfter != nil &&
			rs.NextRetry.Sub(st.NextRetryAfter.Time).Abs() < time.Millisecond &&
			strings.Contains(rs.LastError, "exit code 3")
	}, waitLimit, time.Millisecond, "reconcile state Error, retried exactly when the backoff ends")

	// A server that hangs on initialize times out into Failed.
	st = d.waitServer(hang, "Failed after its 1s timeout", func(st v1alpha1.MCPServerStatus) bool {
		return st.State == v1alpha1.MCPServerStateFailed
	})
	assert.Contains(t, st.LastError, "did not answer initialize and tools/list within 1s")
	assert.Contains(t, st.LastError, "mcp-fake: hanging on initialize as asked")
	d.shutdown()
}

func TestARemoteServerIsConnectedWithItsTools(t *testing.T) {
	t.Parallel()
	url, _ := mcpfake.ServeHTTP(t, fakeBin, "-tools", "remote_echo")

	web := mcpKey("web")
	d := startDaemon(t, supervisor.Backoff{}, map[string]string{
		"mcpservers/web.yaml": fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: web
spec:
  type: streamable-http
  autoStart: true
  url: %s
  headers: {Authorization: "Bearer s3cr3t-header"}
`, url),
		"workflows/remote.yaml": workflowYAML("remote", "x_web_remote_echo"),
	})
	st := d.waitServer(web, "Connected", func(st v1alpha1.MCPServerStatus) bool { return st.State == v1alpha1.MCPServerStateConnected })
	assert.Equal(t, []string{"x_web_remote_echo"}, st.Tools)
	d.waitWorkflow(wfKey("remote"), "valid", func(st v1alpha1.WorkflowStatus) bool { return st.Valid })
	d.shutdown()
}

// BenchmarkSpecChangeToRestartedServerListingTools measures, through the
// whole pipeline, the time from writing a changed MCPServer file to the
// restarted server having answered initialize and tools/list with its new
// tools: the fs watcher's settle delay, the debouncer, the reconcile, the
// old process's stop and the new one's start.
func BenchmarkSpecChangeToRestartedServerListingTools(b *testing.B) {
	bench := mcpKey("bench")
	d := startDaemon(b, supervisor.Backoff{}, map[string]string{
		"mcpservers/bench.yaml": serverYAML("bench", true, "", "-tools", "t0"),
	})
	serves := func(tool string) bool {
		obs, _ := d.sup.Get(bench)
		return obs.Running() && slices.Equal(obs.Tools, []string{tool})
	}
	timeout := time.After(waitLimit)
	for !serves("t0") {
		select {
		case <-d.changed:
		case <-timeout:
			b.Fatal("the server never started")
		}
	}
	for i := 1; b.Loop(); i++ {
		tool := fmt.Sprint("t", i)
		d.write("mcpservers/bench.yaml", serverYAML("bench", true, "", "-tools", tool))
		timeout := time.After(waitLimit)
		for !serves(tool) {
			select {
			case <-d.changed:
			case <-timeout:
				b.Fatalf("the server never restarted with %s", tool)
			}
		}
	}
}
