package main

// End-to-end tests of filesystem mode: the real musterd binary on a
// temporary config dir, driven only through files, its HTTP API and its
// CLI. They poll for conditions with a generous deadline and never assert
// on elapsed time.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
)

// fsEnv is a daemon on its own config and state dirs.
type fsEnv struct {
	*runningDaemon
	config, state string
}

func startFS(t *testing.T, args ...string) *fsEnv {
	t.Helper()
	e := preparedEnv(t, nil)
	e.start(t, args...)
	return e
}

// preparedEnv is an fsEnv whose config dir holds files (by their path
// below it: config.yaml, mcpservers/x.yaml) before musterd starts.
func preparedEnv(t *testing.T, files map[string]string) *fsEnv {
	t.Helper()
	e := &fsEnv{config: t.TempDir(), state: t.TempDir()}
	for _, d := range []string{"mcpservers", "workflows"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.config, d), 0o755))
	}
	for path, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(e.config, path), []byte(content), 0o600))
	}
	return e
}

// start runs musterd on e's dirs with args, and waits until it is ready.
func (e *fsEnv) start(t *testing.T, args ...string) {
	t.Helper()
	e.runningDaemon = startDaemon(t, append([]string{"-config-dir", e.config, "-state-dir", e.state, "-debounce", "50ms", "-rescan", "1s"}, args...)...)
	e.waitReady(t)
}

func workflowYAML(name, tool string) string {
	return fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: %s
spec:
  description: e2e
  steps:
    - id: only
      tool: %s
`, name, tool)
}

// write replaces a file in place.
func (e *fsEnv) write(t *testing.T, rel, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(e.config, rel), []byte(content), 0o644))
}

// renameSave saves as many editors do: a temp file renamed over the file.
func (e *fsEnv) renameSave(t *testing.T, rel, content string) {
	t.Helper()
	path := filepath.Join(e.config, rel)
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

func (e *fsEnv) remove(t *testing.T, rel string) {
	t.Helper()
	require.NoError(t, os.Remove(filepath.Join(e.config, rel)))
}

// resource is what the API returns for one object.
type resource struct {
	Kind     string
	Metadata struct{ Name, Namespace, Hash string }
	Spec     struct {
		Steps []struct{ ID, Tool string }
	}
	Status struct {
		Valid            bool
		ValidationErrors []string
		MissingTools     []string
	}
	Reconcile struct {
		State        string
		LastError    string
		RetryCount   int
		ObservedHash string
	}
	Files []string
}

func (e *fsEnv) resource(t *testing.T, kind, name string) (resource, bool) {
	t.Helper()
	return getObject[resource](t, e, kind, name)
}

// getObject reads the resource kind/default/name from the API as a T, and
// reports whether it exists.
func getObject[T any](t *testing.T, e *fsEnv, kind, name string) (T, bool) {
	t.Helper()
	var o T
	code, body := e.get(t, "/api/v1/resources/"+kind+"/default/"+name)
	if code == http.StatusNotFound {
		return o, false
	}
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &o), body)
	return o, true
}

func (e *fsEnv) list(t *testing.T, kind string) []resource {
	t.Helper()
	code, body := e.get(t, "/api/v1/resources?kind="+kind)
	require.Equal(t, http.StatusOK, code, body)
	var l struct{ Items []resource }
	require.NoError(t, json.Unmarshal([]byte(body), &l))
	return l.Items
}

// eventually polls cond until it holds or the deadline passes; a failure
// adds what each explain says of the last poll.
func eventually(t *testing.T, what string, cond func() bool, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			for _, say := range explain {
				what += ": " + say()
			}
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitState waits until the workflow is in state with its single step
// calling tool (a tool of "" only checks the state).
func (e *fsEnv) waitWorkflow(t *testing.T, name, state, tool string) resource {
	t.Helper()
	var last resource
	eventually(t, fmt.Sprintf("workflow %s is %s with tool %q", name, state, tool), func() bool {
		r, ok := e.resource(t, "workflows", name)
		last = r
		return ok && r.Reconcile.State == state && (tool == "" || len(r.Spec.Steps) == 1 && r.Spec.Steps[0].Tool == tool)
	})
	return last
}

func (e *fsEnv) waitGone(t *testing.T, name string) {
	t.Helper()
	eventually(t, "workflow "+name+" is gone", func() bool {
		_, ok := e.resource(t, "workflows", name)
		return !ok
	})
}

// statusFile reads the state dir's status file of a workflow, if any.
func (e *fsEnv) statusFile(name string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(e.state, "status", "workflows", "default", name+".yaml"))
	return string(data), err == nil
}

var reconcileTotal = regexp.MustCompile(`(?m)^musterd_reconcile_total\{kind="(\w+)",result="(\w+)"\} (\d+)$`)

// reconciles sums musterd_reconcile_total of kind.
func (e *fsEnv) reconciles(t *testing.T, kind string) int {
	t.Helper()
	_, body := e.get(t, "/metrics")
	total := 0
	for _, m := range reconcileTotal.FindAllStringSubmatch(body, -1) {
		if m[1] == kind {
			n, _ := strconv.Atoi(m[3])
			total += n
		}
	}
	return total
}

func TestE2ECreateUpdateDelete(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/deploy.yaml", workflowYAML("deploy", "x_a_one"))
	r := e.waitWorkflow(t, "deploy", "Synced", "x_a_one")
	// No server offers the tool: reconciled, but not valid, and said so.
	assert.False(t, r.Status.Valid)
	assert.Equal(t, []string{"x_a_one"}, r.Status.MissingTools)
	_, body := e.get(t, "/api/v1/resources/workflows/default/deploy")
	assert.Contains(t, body, `"valid": false`, "valid: false must be written, not omitted")
	assert.Equal(t, []string{"workflows/deploy.yaml"}, r.Files)
	eventually(t, "the status file says Synced", func() bool {
		s, ok := e.statusFile("deploy")
		return ok && strings.Contains(s, "state: Synced")
	})

	e.write(t, "workflows/deploy.yaml", workflowYAML("deploy", "x_a_two"))
	e.waitWorkflow(t, "deploy", "Synced", "x_a_two")

	e.remove(t, "workflows/deploy.yaml")
	e.waitGone(t, "deploy")
	eventually(t, "the status file is removed", func() bool {
		_, ok := e.statusFile("deploy")
		return !ok
	})
	assert.NoFileExists(t, filepath.Join(e.config, "workflows", "deploy.yaml"), "musterd never writes a definition file")
}

func TestE2EAtomicRenameSaveAndDeleteRecreate(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/w.yaml", workflowYAML("w", "x_a_one"))
	e.waitWorkflow(t, "w", "Synced", "x_a_one")

	e.renameSave(t, "workflows/w.yaml", workflowYAML("w", "x_a_two"))
	e.waitWorkflow(t, "w", "Synced", "x_a_two")

	e.remove(t, "workflows/w.yaml")
	e.write(t, "workflows/w.yaml", workflowYAML("w", "x_a_three"))
	e.waitWorkflow(t, "w", "Synced", "x_a_three")
}

func TestE2EConfigMapDataSwap(t *testing.T) {
	e := startFS(t)
	dir := filepath.Join(e.config, "workflows")
	// A ConfigMap volume: files are symlinks into ..data, itself a symlink
	// to a timestamped directory that updates replace atomically.
	publish := func(version, tool string) {
		ts := filepath.Join(dir, "..2026_11_21_"+version)
		require.NoError(t, os.Mkdir(ts, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ts, "cm.yaml"), []byte(workflowYAML("cm", tool)), 0o644))
		require.NoError(t, os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")))
		require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	}
	publish("1", "x_a_one")
	require.NoError(t, os.Symlink("..data/cm.yaml", filepath.Join(dir, "cm.yaml")))
	e.waitWorkflow(t, "cm", "Synced", "x_a_one")

	publish("2", "x_a_two") // no event on cm.yaml itself
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "..2026_11_21_1")))
	e.waitWorkflow(t, "cm", "Synced", "x_a_two")
}

func TestE2EMalformedEditKeepsTheLastGoodSpecAndShowsTheError(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/m.yaml", workflowYAML("m", "x_a_one"))
	e.waitWorkflow(t, "m", "Synced", "x_a_one")

	e.write(t, "workflows/m.yaml", strings.Replace(workflowYAML("m", "x_a_two"), "tool:", "tol:", 1))
	r := e.waitWorkflow(t, "m", "Error", "x_a_one")
	assert.Contains(t, r.Reconcile.LastError, "workflows/m.yaml:9")
	assert.Contains(t, r.Reconcile.LastError, "tol")
	assert.Equal(t, "x_a_one", r.Spec.Steps[0].Tool, "the last good spec stays in force")
	eventually(t, "the status file shows the error", func() bool {
		s, _ := e.statusFile("m")
		return strings.Contains(s, "state: Error") && strings.Contains(s, "workflows/m.yaml:9")
	})

	e.write(t, "workflows/m.yaml", "kind: [\n") // not even YAML: still no delete
	eventually(t, "the YAML error replaces the field error", func() bool {
		r, ok := e.resource(t, "workflows", "m")
		require.True(t, ok, "a file that does not parse was taken for a delete")
		return r.Reconcile.State == "Error" && strings.Contains(r.Reconcile.LastError, "workflows/m.yaml:") &&
			!strings.Contains(r.Reconcile.LastError, "tol")
	})
	r, _ = e.resource(t, "workflows", "m")
	assert.Equal(t, "x_a_one", r.Spec.Steps[0].Tool, "the last good spec stays in force")

	e.write(t, "workflows/m.yaml", workflowYAML("m", "x_a_fixed"))
	e.waitWorkflow(t, "m", "Synced", "x_a_fixed")
}

func TestE2ETwoFilesWithOneIdentity(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/one.yaml", workflowYAML("twin", "x_a_one"))
	e.waitWorkflow(t, "twin", "Synced", "x_a_one")

	e.write(t, "workflows/two.yaml", workflowYAML("twin", "x_a_two"))
	r := e.waitWorkflow(t, "twin", "Error", "x_a_one")
	assert.Contains(t, r.Reconcile.LastError, "workflows/one.yaml")
	assert.Contains(t, r.Reconcile.LastError, "workflows/two.yaml")
	assert.ElementsMatch(t, []string{"workflows/one.yaml", "workflows/two.yaml"}, r.Files)

	e.remove(t, "workflows/one.yaml")
	e.waitWorkflow(t, "twin", "Synced", "x_a_two")
}

func TestE2EDirectoryRemovedAndRecreated(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/d.yaml", workflowYAML("d", "x_a_one"))
	e.waitWorkflow(t, "d", "Synced", "x_a_one")

	require.NoError(t, os.RemoveAll(filepath.Join(e.config, "workflows")))
	e.waitGone(t, "d")

	require.NoError(t, os.Mkdir(filepath.Join(e.config, "workflows"), 0o755))
	e.write(t, "workflows/d.yaml", workflowYAML("d", "x_a_two"))
	e.waitWorkflow(t, "d", "Synced", "x_a_two")
}

func TestE2EAThousandFilesAtOnceAndZeroReconcilesWhileIdle(t *testing.T) {
	record := filepath.Join(t.TempDir(), "run.trace")
	e := startFS(t, "-record", record)
	const n = 1000
	for i := range n {
		e.write(t, fmt.Sprintf("workflows/w%04d.yaml", i), workflowYAML(fmt.Sprintf("w%04d", i), "x_a_one"))
	}
	eventually(t, "all 1,000 workflows are Synced", func() bool {
		items := e.list(t, "workflows")
		if len(items) != n {
			return false
		}
		for _, r := range items {
			if r.Reconcile.State != "Synced" {
				return false
			}
		}
		return true
	})
	total := e.reconciles(t, "Workflow")
	assert.GreaterOrEqual(t, total, n)
	assert.LessOrEqual(t, total, 2*n, "each file is reconciled once or twice")

	// Idle: status writes, periodic rescans (every second here) and the
	// passing of time cause no reconcile. The window spans several rescans
	// and many debounce intervals. A fixed real-time window: idleness is an
	// absence that no condition can be polled for, and the real binary runs
	// on the real clock.
	before := e.reconciles(t, "Workflow")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		require.Equal(t, before, e.reconciles(t, "Workflow"), "an idle daemon reconciled")
	}

	// Once or twice for each file, not only on average: the run's trace
	// has every ReconciliationStarted with its key.
	e.stopWith(t, syscall.SIGTERM, e2eDeadline)
	tr, err := eventtrace.ReadFile(record)
	require.NoError(t, err)
	starts := map[events.Key]int{}
	for _, entry := range tr.Entries {
		if s, ok := entry.Event.(events.ReconciliationStarted); ok && s.Key.Kind == "Workflow" {
			starts[s.Key]++
		}
	}
	assert.Len(t, starts, n, "every file is reconciled")
	for key, times := range starts {
		assert.LessOrEqual(t, times, 2, "%s is reconciled %d times", key, times)
	}
}

// cli runs the real binary's client commands against the daemon.
func (e *fsEnv) cli(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, code, err := e.runCLI(args...)
	require.NoError(t, err)
	return out, code
}

// runCLI runs the real binary's client command and reports an error only
// when it could not be run; it never fails the test, so it may run on a
// goroutine of the test's own (require's FailNow may not).
func (e *fsEnv) runCLI(args ...string) (string, int, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "MUSTERD_SERVER=http://"+e.addr)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	return string(out), 0, err
}

// wait --for synced right after an edit returns only once the edit is
// reconciled: never on the Synced of the definition before it, which the
// store still holds until the change reaches it. Each round edits the
// workflow's tool and checks what is in force once wait returned: the new
// spec, and a status (the missing tool) made from it.
func TestE2ECLIWaitForSyncedRightAfterAnEditWaitsForThatEdit(t *testing.T) {
	t.Parallel()
	e := startFS(t)
	e.write(t, "workflows/edited.yaml", workflowYAML("edited", "x_a_t0"))
	out, code := e.cli(t, "wait", "wf/edited", "--for", "synced", "--timeout", "30s")
	require.Equal(t, 0, code, out)
	for i := 1; i <= 20; i++ {
		tool := fmt.Sprintf("x_a_t%d", i)
		e.renameSave(t, "workflows/edited.yaml", workflowYAML("edited", tool))
		out, code := e.cli(t, "wait", "wf/edited", "--for", "synced", "--timeout", "30s")
		require.Equal(t, 0, code, out)
		r, ok := e.resource(t, "workflows", "edited")
		require.True(t, ok)
		require.Len(t, r.Spec.Steps, 1)
		assert.Equal(t, tool, r.Spec.Steps[0].Tool, "round %d: the spec in force is the edit", i)
		assert.Equal(t, "Synced", r.Reconcile.State, "round %d", i)
		assert.NotEmpty(t, r.Metadata.Hash)
		assert.Equal(t, r.Metadata.Hash, r.Reconcile.ObservedHash, "round %d: the Synced is of the definition in force", i)
		assert.Equal(t, []string{tool}, r.Status.MissingTools, "round %d: the status was made from the edit", i)
	}
}

func TestE2ECLIWaitGetAndReconcile(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/cli.yaml", workflowYAML("cli", "x_a_one"))
	out, code := e.cli(t, "wait", "wf/cli", "--for", "synced", "--timeout", "30s")
	assert.Equal(t, 0, code, out)

	out, code = e.cli(t, "get", "workflows")
	assert.Equal(t, 0, code, out)
	assert.Regexp(t, `(?m)^default\s+cli\s+`, out)
	assert.Contains(t, out, "Synced")

	out, code = e.cli(t, "get", "wf", "cli", "-o", "json")
	assert.Equal(t, 0, code, out)
	var obj resource
	require.NoError(t, json.Unmarshal([]byte(out), &obj))
	assert.Equal(t, "Synced", obj.Reconcile.State)

	out, code = e.cli(t, "describe", "wf/cli")
	assert.Equal(t, 0, code, out)
	assert.Regexp(t, `(?m)^Events:\n.*ResourceChanged +workflows/default/cli +operation=create`, out, "describe shows the recent events")
	assert.Regexp(t, `(?m)ResourceSynced +workflows/default/cli`, out)

	out, code = e.cli(t, "reconcile", "workflows/cli")
	assert.Equal(t, 0, code, out)

	// A resource that never appears: wait times out with a non-zero exit.
	out, code = e.cli(t, "wait", "wf/never", "--for", "synced", "--timeout", "1s")
	assert.Equal(t, 1, code, out)

	// A resource that fails while waited on: a non-zero exit at once, not
	// at the timeout. The timeout is far beyond the deadline below, so an
	// exit at the timeout fails the test rather than passing it.
	done := make(chan struct{})
	var waitOut string
	var waitCode int
	var waitErr error
	go func() {
		defer close(done)
		waitOut, waitCode, waitErr = e.runCLI("wait", "wf/broken", "--for", "synced", "--timeout", "1h")
	}()
	eventually(t, "the waiting CLI is subscribed", func() bool {
		_, body := e.get(t, "/metrics")
		return strings.Contains(body, `subscriber="api-events-`)
	})
	e.write(t, "workflows/broken.yaml", strings.Replace(workflowYAML("broken", "x_a_one"), "steps:", "stepz:", 1))
	select {
	case <-done:
		require.NoError(t, waitErr)
		assert.Equal(t, 1, waitCode, waitOut)
		assert.NotContains(t, waitOut, "timed out", "wait exited on the failure, not on its timeout")
	case <-time.After(e2eDeadline):
		t.Fatal("wait did not exit on a failed resource")
	}

	out, code = e.cli(t, "get", "nonsense")
	assert.Equal(t, 2, code, out)
}
