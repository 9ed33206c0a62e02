package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/logtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e2eDeadline bounds how long an end-to-end test waits for the real binary
// to reach a condition; it polls, it never sleeps a fixed time.
const e2eDeadline = 60 * time.Second

// binary is musterd built for the tests; workDir is where the daemon runs,
// holding bin/mcp-fake, which the example config names relative to it.
var binary, workDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "musterd-e2e")
	if err != nil {
		panic(err)
	}
	workDir = dir
	binary = filepath.Join(dir, "musterd")
	for _, b := range []struct{ out, pkg string }{{binary, "."}, {filepath.Join(dir, "bin", "mcp-fake"), "../mcp-fake"}} {
		build := exec.Command("go", "build", "-race", "-o", b.out, b.pkg)
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			panic("build " + b.pkg + ": " + err.Error())
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runningDaemon is a musterd process started by a test.
type runningDaemon struct {
	cmd    *exec.Cmd
	addr   string
	stderr *logtest.Buffer
	exited chan error
}

// stopWith sends sig to musterd and requires it to exit 0 within limit.
func (d *runningDaemon) stopWith(t *testing.T, sig syscall.Signal, limit time.Duration) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(sig))
	select {
	case err := <-d.exited:
		require.NoError(t, err, "musterd must exit 0 on %s\n%s", sig, d.stderr)
	case <-time.After(limit):
		t.Fatalf("musterd did not exit within %s of %s\n%s", limit, sig, d.stderr)
	}
}

var listenLine = regexp.MustCompile(`msg="musterd starting".* listen=(\S+)`)

func startDaemon(t testing.TB, args ...string) *runningDaemon {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"run", "-listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = workDir
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	d := &runningDaemon{cmd: cmd, stderr: &logtest.Buffer{}, exited: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			d.stderr.WriteString(line + "\n")
			if m := listenLine.FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
		d.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case d.addr = <-found:
	case err := <-d.exited:
		t.Fatalf("musterd exited before listening: %v\n%s", err, d.stderr)
	case <-time.After(e2eDeadline):
		t.Fatalf("musterd did not start listening\n%s", d.stderr)
	}
	return d
}

func (d *runningDaemon) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func (d *runningDaemon) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for time.Now().Before(deadline) {
		if code, _ := d.get(t, "/readyz"); code == http.StatusOK {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("musterd never became ready")
}

func TestDaemonServesHealthMetricsAndStatusThenStopsOnSIGTERM(t *testing.T) {
	examples, err := filepath.Abs("../../examples/config")
	require.NoError(t, err)
	d := startDaemon(t, "-config-dir", examples, "-state-dir", t.TempDir())
	d.waitReady(t)

	code, body := d.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	var health struct {
		Healthy    bool
		Components []struct{ Name, State string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &health))
	assert.True(t, health.Healthy)
	var names []string
	for _, c := range health.Components {
		names = append(names, c.Name)
		assert.Equal(t, "running", c.State, c.Name)
	}
	assert.ElementsMatch(t, []string{"coordinator", "debouncer", "fs-watcher", "metrics", "history", "mcp-refresh", "muster-events", "readiness", "runtime-bridge", "status-store", "supervisor", "workflow-tools"}, names)

	code, body = d.get(t, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	for _, metric := range []string{"musterd_active_workers", "musterd_bus_pending", "musterd_debouncer_coalesced_total", "musterd_reconcile_panics_total",
		"go_memstats_heap_alloc_bytes", "go_goroutines", "process_resident_memory_bytes"} {
		assert.Contains(t, body, metric)
	}

	// Once the servers run, their tools reach the catalogue and the
	// workflow that uses them is reconciled again, valid.
	var got []string
	eventually(t, "the example config settles: servers Running, the workflow valid", func() bool {
		code, body := d.get(t, "/api/v1/resources")
		require.Equal(t, http.StatusOK, code)
		var list struct {
			Items []struct {
				Kind     string
				Metadata struct{ Name string }
				Status   struct {
					State string
					Valid bool
				}
				Reconcile struct{ State string }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		got = got[:0]
		for _, it := range list.Items {
			got = append(got, fmt.Sprintf("%s/%s=%s %s %v", it.Kind, it.Metadata.Name, it.Reconcile.State, it.Status.State, it.Status.Valid))
		}
		return fmt.Sprint(got) == fmt.Sprint([]string{"MCPServer/clock=Synced Running false", "MCPServer/echo=Synced Running false", "Workflow/greet=Synced  true"})
	})
	code, _ = d.get(t, "/api/v1/resources/workflows/default/nope")
	assert.Equal(t, http.StatusNotFound, code)

	d.stopWith(t, syscall.SIGTERM, e2eDeadline)
	assert.Contains(t, d.stderr.String(), `msg="musterd stopped"`)
}

func TestDaemonRefusesANonLoopbackListenAddress(t *testing.T) {
	out, err := exec.Command(binary, "run", "-listen", "0.0.0.0:0").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "not a loopback address; pass -allow-remote")
}

func TestCommandLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run([]string{"version"}, &stdout, &stderr))
	assert.Equal(t, "musterd dev\n", stdout.String())

	stderr.Reset()
	assert.Equal(t, 2, run([]string{"frobnicate"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `unknown command "frobnicate"`)

	stderr.Reset()
	assert.Equal(t, 2, run(nil, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "Usage:")

	stderr.Reset()
	assert.Equal(t, 2, run([]string{"run", "-log-format", "xml"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-log-format must be text or json")

	stderr.Reset()
	assert.Equal(t, 2, run([]string{"run", "extra"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `unexpected argument "extra"`)
}

// -health-listen serves the probes and metrics on an address of its own,
// and nothing of the API: no resource, no event stream, no reconcile.
func TestTheHealthListenerServesOnlyProbesAndMetrics(t *testing.T) {
	examples, err := filepath.Abs("../../examples/config")
	require.NoError(t, err)
	d := startDaemon(t, "-config-dir", examples, "-state-dir", t.TempDir(), "-health-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`msg="musterd starting".* health_listen=(\S+)`).FindStringSubmatch(d.stderr.String())
	require.NotNil(t, m, "the log names the health listener's address\n%s", d.stderr)
	require.NotEqual(t, d.addr, m[1])
	probes := &runningDaemon{addr: m[1]}
	d.waitReady(t)

	code, body := probes.get(t, "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"ready":true}`, body)
	code, body = probes.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name": "fs-watcher"`)
	code, body = probes.get(t, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "musterd_reconcile_total", "the daemon's own metrics")
	for _, path := range []string{"/api/v1/resources", "/api/v1/resources/mcpservers/default/echo"} {
		code, _ = d.get(t, path)
		assert.Equal(t, http.StatusOK, code, "the API serves %s", path)
	}
	for _, path := range []string{"/api/v1/resources", "/api/v1/resources/mcpservers/default/echo",
		"/api/v1/resources/mcpservers/default/echo/events", "/api/v1/events", "/api/v1/events?format=trace"} {
		code, body = probes.get(t, path)
		assert.Equal(t, http.StatusNotFound, code, "%s: %s", path, body)
	}
	resp, err := http.Post("http://"+probes.addr+"/api/v1/resources/mcpservers/default/echo/reconcile", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestCheckListen(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8090", "[::1]:8090", "localhost:1", "127.1.2.3:0"} {
		assert.NoError(t, checkListen(ok, false, false), ok)
	}
	for _, bad := range []string{"0.0.0.0:8090", ":8090", "10.0.0.1:80", "example.com:80"} {
		assert.Error(t, checkListen(bad, false, true), bad)
		assert.ErrorContains(t, checkListen(bad, true, false), "no API token is set", "-allow-remote alone never opens the API: %s", bad)
		assert.NoError(t, checkListen(bad, true, true), bad)
	}
	assert.Error(t, checkListen("no-port", false, false))
	_, _, err := parseDaemonFlags([]string{"-config-dir", t.TempDir(), "-health-listen", "no-port"}, io.Discard)
	assert.ErrorContains(t, err, `-health-listen "no-port": address no-port: missing port in address`)
}

// -allow-remote without a token is refused at start, naming the fix; with
// a token (here from $MUSTERD_TOKEN) the same address is accepted.
func TestDaemonRefusesARemoteAPIWithoutAToken(t *testing.T) {
	cmd := exec.Command(binary, "run", "-config-dir", t.TempDir(), "-listen", "0.0.0.0:0", "-allow-remote")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MUSTERD_TOKEN=") })
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), `-listen "0.0.0.0:0" resolves to 0.0.0.0, not a loopback address and no API token is set: give one in $MUSTERD_TOKEN, -token-file or -api-token, or keep the API on loopback and serve probes and metrics with -health-listen`)

	t.Setenv("MUSTERD_TOKEN", "remote-token")
	_, _, err = parseDaemonFlags([]string{"-config-dir", t.TempDir(), "-listen", "0.0.0.0:0", "-allow-remote"}, io.Discard)
	assert.NoError(t, err)
}
