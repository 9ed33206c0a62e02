package workflowrun_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// tool calls an execution tool through the router and decodes its JSON.
func (h *harness) tool(name string, args map[string]any, out any) (string, bool) {
	h.t.Helper()
	res, err := h.router.CallTool(context.Background(), name, args, nil)
	require.NoError(h.t, err)
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError && out != nil {
		require.NoError(h.t, json.Unmarshal([]byte(text), out), text)
	}
	return text, res.IsError
}

func TestExecutionsAreListedAndGotInMustersShapes(t *testing.T) {
	h := newHarness(t, workflowrun.Options{StateDir: t.TempDir()})
	h.stateDir = h.engineOpts.StateDir
	h.declare(wf("ok", `  args:
    api_token: {type: string}
    who: {type: string}
  steps:
    - {id: first, tool: x_fake_json, args: {who: "{{ .input.who }}", session_token: "{{ .input.api_token }}"}, output: true}
    - {id: second, tool: x_fake_fail, allowFailure: true}
`))
	h.declare(wf("bad", "  steps:\n    - {id: boom, tool: x_fake_fail}\n"))
	var ids []string
	for range 3 {
		doc, _ := h.run("ok", map[string]any{"who": "ada", "api_token": "s3cret"})
		ids = append(ids, doc["execution_id"].(string))
	}
	doc, _ := h.run("bad", nil)
	failedID := doc["execution_id"].(string)

	var list types.ExecutionList
	h.tool(coretools.ToolExecutionList, nil, &list)
	assert.Equal(t, 4, list.Total)
	assert.Equal(t, 50, list.Limit)
	assert.False(t, list.HasMore)
	require.Len(t, list.Executions, 4)
	assert.Equal(t, failedID, list.Executions[0].ExecutionID, "newest first")
	assert.Equal(t, "failed", list.Executions[0].Status)
	assert.Equal(t, 2, list.Executions[1].StepCount)

	h.tool(coretools.ToolExecutionList, map[string]any{"workflow_name": "ok", "limit": 2}, &list)
	assert.Equal(t, 3, list.Total)
	assert.True(t, list.HasMore)
	require.Len(t, list.Executions, 2)
	assert.Equal(t, ids[2], list.Executions[0].ExecutionID)
	h.tool(coretools.ToolExecutionList, map[string]any{"workflow_name": "ok", "limit": 2, "offset": 2}, &list)
	assert.False(t, list.HasMore)
	require.Len(t, list.Executions, 1)
	assert.Equal(t, ids[0], list.Executions[0].ExecutionID)
	h.tool(coretools.ToolExecutionList, map[string]any{"status": "failed"}, &list)
	assert.Equal(t, 1, list.Total)

	for args, want := range map[string]string{
		`{"limit":0}`:       "limit must be at least 1 (minimum value)",
		`{"limit":1001}`:    "limit must be at most 1000 (maximum value)",
		`{"limit":"x"}`:     "limit must be a number",
		`{"offset":-1}`:     "offset must be at least 0 (minimum value)",
		`{"status":""}`:     "status must be one of the enum values: inprogress, completed, failed",
		`{"status":"done"}`: "status must be one of the enum values: inprogress, completed, failed",
	} {
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(args), &a))
		text, isError := h.tool(coretools.ToolExecutionList, a, nil)
		assert.True(t, isError, args)
		assert.Equal(t, want, text, args)
	}

	var exec types.Execution
	h.tool(coretools.ToolExecutionGet, map[string]any{"execution_id": ids[0]}, &exec)
	assert.Equal(t, "ok", exec.WorkflowName)
	assert.Equal(t, "completed", exec.Status)
	assert.Equal(t, map[string]any{"who": "ada", "api_token": "[redacted]"}, exec.Input, "secrets redacted")
	require.Len(t, exec.Steps, 2)
	assert.Equal(t, "first", exec.Steps[0].StepID)
	assert.Equal(t, map[string]any{"who": "ada", "session_token": "[redacted]"}, exec.Steps[0].Result, "a secret in a result is not kept")
	assert.Equal(t, map[string]any{"who": "ada", "session_token": "[redacted]"}, exec.Steps[0].Input)
	data, err := os.ReadFile(filepath.Join(h.stateDir, workflowrun.ExecutionsDir, ids[0]+".json"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "s3cret", "nor on disk")
	assert.Equal(t, "first", exec.Steps[0].StoredAs)
	assert.Equal(t, "failed", exec.Steps[1].Status)
	assert.NotNil(t, exec.CompletedAt)

	var summary map[string]any
	h.tool(coretools.ToolExecutionGet, map[string]any{"execution_id": ids[0], "include_steps": false}, &summary)
	assert.NotContains(t, summary, "steps")
	assert.NotContains(t, summary["result"], "steps")
	assert.Contains(t, summary["result"], "workflow")

	var one types.Execution
	h.tool(coretools.ToolExecutionGet, map[string]any{"execution_id": ids[0], "step_id": "second"}, &one)
	require.Len(t, one.Steps, 1)
	assert.Equal(t, "second", one.Steps[0].StepID)
	assert.Nil(t, one.Result)
	require.NotNil(t, one.Error, "the step failed: its error and the input are shown")
	assert.Equal(t, "x_fake_fail returned an error: failed as asked: {}", *one.Error)

	for args, want := range map[string]string{
		`{}`:                      "execution_id is required",
		`{"execution_id":"nope"}`: "Failed to get execution: execution nope not found",
		`{"execution_id":"` + ids[0] + `","step_id":""}`:          "step_id is invalid: cannot be empty",
		`{"execution_id":"` + ids[0] + `","step_id":"x"}`:         "Failed to get execution: step x not found in execution " + ids[0],
		`{"execution_id":"` + ids[0] + `","include_steps":"yes"}`: "include_steps must be a boolean value",
	} {
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(args), &a))
		text, isError := h.tool(coretools.ToolExecutionGet, a, nil)
		assert.True(t, isError, args)
		assert.Equal(t, want, text, args)
	}
}

func TestExecutionsSurviveARestartAndOnesInProgressAreMarkedFailed(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, workflowrun.Options{StateDir: dir})
	h.declare(wf("quick", "  steps:\n    - {id: s, tool: x_fake_json, args: {v: 1}}\n"))
	h.declare(wf("slow", "  steps:\n    - {id: nap, tool: x_fake_sleep, args: {ms: 600000}}\n"))
	doc, _ := h.run("quick", nil)
	doneID := doc["execution_id"].(string)

	ctx, cancel := context.WithCancel(context.Background())
	slowDone := make(chan struct{})
	defer func() { cancel(); <-slowDone }()
	go func() {
		defer close(slowDone)
		_, _ = h.router.CallTool(ctx, "workflow_slow", nil, nil) // cancelled at the end
	}()
	var running types.ExecutionList
	require.Eventually(t, func() bool {
		running, _ = h.engine.Executions(types.ExecutionQuery{Status: "inprogress"})
		return running.Total == 1
	}, 10*time.Second, 5*time.Millisecond)
	runningID := running.Executions[0].ExecutionID

	// The files are private and whole: no temporary file is left.
	entries, err := os.ReadDir(filepath.Join(dir, workflowrun.ExecutionsDir))
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), e.Name())
	}

	// A second engine on the same state dir is musterd after a crash: the
	// run it finds in progress did not finish.
	restarted := newHarness(t, workflowrun.Options{StateDir: dir})
	list, err := restarted.engine.Executions(types.ExecutionQuery{})
	require.NoError(t, err)
	assert.Equal(t, 2, list.Total)
	got, ok := restarted.engine.Execution(runningID)
	require.True(t, ok)
	assert.Equal(t, "failed", got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, workflowrun.ReasonInterrupted, *got.Error)
	got, ok = restarted.engine.Execution(doneID)
	require.True(t, ok)
	assert.Equal(t, "completed", got.Status)
	assert.Equal(t, map[string]any{"v": 1.0}, got.Steps[0].Result)
}

func TestRetentionIsBoundedByCountAndAge(t *testing.T) {
	dir := t.TempDir()
	execDir := filepath.Join(dir, workflowrun.ExecutionsDir)
	require.NoError(t, os.MkdirAll(execDir, 0o700))
	old := types.Execution{ExecutionID: "old", WorkflowName: "quick", Status: "completed",
		StartedAt: time.Now().Add(-48 * time.Hour), Input: map[string]any{}}
	data, err := json.Marshal(old)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(execDir, "old.json"), data, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(execDir, "garbage.json"), []byte("{not json"), 0o600))

	h := newHarness(t, workflowrun.Options{StateDir: dir, MaxExecutions: 3, MaxAge: 24 * time.Hour})
	_, ok := h.engine.Execution("old")
	assert.False(t, ok, "older than MaxAge")
	assert.NoFileExists(t, filepath.Join(execDir, "old.json"))

	h.declare(wf("quick", "  steps:\n    - {id: s, tool: x_fake_json}\n"))
	var ids []string
	for range 5 {
		doc, _ := h.run("quick", nil)
		ids = append(ids, doc["execution_id"].(string))
	}
	list, err := h.engine.Executions(types.ExecutionQuery{})
	require.NoError(t, err)
	assert.Equal(t, 3, list.Total)
	assert.Equal(t, []string{ids[4], ids[3], ids[2]}, []string{list.Executions[0].ExecutionID, list.Executions[1].ExecutionID, list.Executions[2].ExecutionID})
	files, err := filepath.Glob(filepath.Join(execDir, "*-*.json"))
	require.NoError(t, err)
	assert.Len(t, files, 3)
}

func TestEachRunPublishesItsStartAndEndAndIsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, workflowrun.Options{Metrics: reg})
	k := h.declare(wf("quick", "  steps:\n    - {id: s, tool: x_fake_json}\n"))
	h.declare(wf("bad", "  steps:\n    - {id: s, tool: x_fake_fail}\n"))
	doc, _ := h.run("quick", nil)
	id := doc["execution_id"].(string)
	h.run("bad", nil)
	h.run("bad", nil)

	started := nextRunEvent(h).(events.WorkflowExecutionStarted)
	assert.Equal(t, k, started.Key)
	assert.Equal(t, id, started.ExecutionID)
	finished := nextRunEvent(h).(events.WorkflowExecutionFinished)
	assert.Equal(t, id, finished.ExecutionID)
	assert.Equal(t, "completed", finished.Status)
	nextRunEvent(h)
	failed := nextRunEvent(h).(events.WorkflowExecutionFinished)
	assert.Equal(t, "failed", failed.Status)
	assert.Equal(t, `workflow bad, step s: x_fake_fail returned an error: failed as asked: {}`, failed.Error)

	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP musterd_workflow_executions_total Workflow executions finished, by workflow and status (completed, failed).
# TYPE musterd_workflow_executions_total counter
musterd_workflow_executions_total{status="completed",workflow="quick"} 1
musterd_workflow_executions_total{status="failed",workflow="bad"} 2
`), "musterd_workflow_executions_total"))
	n, err := testutil.GatherAndCount(reg, "musterd_workflow_execution_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "one histogram per workflow")
}

// CheckQuery tells a limit not given (the default) from one given as 0
// (an error naming the field): it is the one place a query is checked.
func TestCheckQueryTellsNoLimitFromZero(t *testing.T) {
	q := types.ExecutionQuery{}
	require.NoError(t, workflowrun.CheckQuery(&q))
	require.NotNil(t, q.Limit)
	assert.Equal(t, types.DefaultExecutionLimit, *q.Limit, "not given: the default")

	given := 7
	q = types.ExecutionQuery{Limit: &given}
	require.NoError(t, workflowrun.CheckQuery(&q))
	assert.Equal(t, 7, *q.Limit)

	for limit, want := range map[int]string{
		0:    "limit must be at least 1 (minimum value)",
		-1:   "limit must be at least 1 (minimum value)",
		1001: "limit must be at most 1000 (maximum value)",
	} {
		assert.EqualError(t, workflowrun.CheckQuery(&types.ExecutionQuery{Limit: new(limit)}), want, limit)
	}
}
