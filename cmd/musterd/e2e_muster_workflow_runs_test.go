package main

// End to end, a workflow run and its execution record as muster's clients
// read them: the real musterd binary, a real mcp-fake server, muster's own
// way of calling (call_tool on /mcp, core_workflow_create then the
// workflow at once), and the records read back through
// core_workflow_execution_get.

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// outputOf is a workflow's rendered output without the execution_id that
// muster adds to it, having checked that it is there.
func outputOf(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	assert.NotEmpty(t, doc["execution_id"], "muster adds the execution's id to the output")
	out := maps.Clone(doc)
	delete(out, "execution_id")
	return out
}

func TestE2EMusterWorkflowRunsAndTheirRecords(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "json,fail")...))
	e.write(t, "workflows/shaped.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: shaped
spec:
  steps:
    - {id: pods, tool: x_fake_json, args: {items: [{name: pod-a}]}}
  output:
    first: "{{ (index .results.pods.items 0).name }}"
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: broken-output
spec:
  steps:
    - {id: pods, tool: x_fake_json, args: {items: [{name: pod-a}]}}
  onFailure:
    - {id: cleanup, tool: x_fake_fail}
  output:
    value: "{{ .results.missing.field }}"
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: large
spec:
  steps:
    - {id: noop, tool: core_service_list}
  output:
    blob: '{{ repeat 400000 "x" }}'
`)
	ms := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	s := e.directClient(t, nil)
	waitTool(t, s, "x_fake_json", true)

	// muster's clients create a workflow, then call it at once.
	out, isErr := musterCall(t, ms, "core_workflow_create", map[string]any{"name": "steps-test",
		"args": map[string]any{"names": map[string]any{"type": "array", "required": true}},
		"steps": []any{
			map[string]any{"id": "services_data", "tool": "core_service_list", "store": true},
			map[string]any{"id": "loop", "forEach": map[string]any{"items": "{{ .input.names }}", "as": "name",
				"steps": []any{map[string]any{"id": "hello", "tool": "x_fake_json", "args": map[string]any{"said": "hello {{ .vars.name }}"}, "store": true}}}},
			map[string]any{"id": "config_data", "tool": "core_config_get", "store": true},
		}})
	require.False(t, isErr, out)
	text, isErr := musterCall(t, ms, "workflow_steps-test", map[string]any{"names": []any{"ada", "alan"}})
	require.False(t, isErr, "called right after its creation: %s", text)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &doc))
	assert.Equal(t, "completed", doc["status"])
	assert.Equal(t, []any{"input.names"}, doc["template_vars"])
	var ids []string
	for _, st := range doc["steps"].([]any) {
		ids = append(ids, st.(map[string]any)["id"].(string))
	}
	assert.Equal(t, []string{"services_data", "hello", "hello", "config_data"}, ids, "each iteration under its step's own id")
	id := doc["execution_id"].(string)

	t.Run("the record with its steps", func(t *testing.T) {
		text, isErr := musterCall(t, ms, coretools.ToolExecutionGet, map[string]any{"execution_id": id, "include_steps": true})
		require.False(t, isErr, text)
		var exec types.Execution
		require.NoError(t, json.Unmarshal([]byte(text), &exec))
		assert.Equal(t, "completed", exec.Status)
		require.Len(t, exec.Steps, 4)
		for i, want := range []struct{ id, tool, storedAs string }{
			{"services_data", "core_service_list", "services_data"},
			{"hello", "x_fake_json", "hello_0"},
			{"hello", "x_fake_json", "hello_1"},
			{"config_data", "core_config_get", "config_data"},
		} {
			assert.Equal(t, want.id, exec.Steps[i].StepID)
			assert.Equal(t, want.tool, exec.Steps[i].Tool)
			assert.Equal(t, want.storedAs, exec.Steps[i].StoredAs)
			assert.Equal(t, "completed", exec.Steps[i].Status)
		}
		cfg, _ := exec.Steps[3].Result.(map[string]any)
		assert.Equal(t, "streamable-http", cfg["Aggregator"].(map[string]any)["Transport"], "core_config_get in muster's shape")
	})

	t.Run("one step by step_id", func(t *testing.T) {
		for stepID, said := range map[string]string{"hello": "hello ada", "hello_1": "hello alan"} {
			text, isErr := musterCall(t, ms, coretools.ToolExecutionGet, map[string]any{"execution_id": id, "step_id": stepID})
			require.False(t, isErr, text)
			var exec types.Execution
			require.NoError(t, json.Unmarshal([]byte(text), &exec))
			require.Len(t, exec.Steps, 1)
			assert.Equal(t, map[string]any{"said": said}, exec.Steps[0].Result, stepID)
			assert.NotContains(t, text, "services_data")
			assert.NotContains(t, text, "config_data")
			assert.Contains(t, text, `"started_at"`)
			assert.Contains(t, text, `"duration_ms"`)
		}
	})

	t.Run("an output carries its execution's id", func(t *testing.T) {
		text, isErr := musterCall(t, ms, "workflow_shaped", nil)
		require.False(t, isErr, text)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out))
		assert.Equal(t, "pod-a", out["first"])
		got, isErr := musterCall(t, ms, coretools.ToolExecutionGet, map[string]any{"execution_id": out["execution_id"]})
		require.False(t, isErr, got)
		assert.Contains(t, got, `"workflow_name":"shaped"`)
	})

	t.Run("a broken output template keeps the results", func(t *testing.T) {
		text, isErr := musterCall(t, ms, "workflow_broken-output", nil)
		require.True(t, isErr)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out))
		assert.True(t, strings.HasPrefix(out["output_error"].(string), "failed to render output template: output.value: "), out["output_error"])
		assert.Contains(t, text, "pod-a")
		assert.NotContains(t, text, "cleanup", "onFailure does not run: every step succeeded")
	})

	t.Run("a record past its bound is truncated", func(t *testing.T) {
		text, isErr := musterCall(t, ms, "workflow_large", nil)
		require.False(t, isErr)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out))
		assert.Len(t, out["blob"], 400000, "the caller gets it whole")
		got, isErr := musterCall(t, ms, coretools.ToolExecutionGet, map[string]any{"execution_id": out["execution_id"]})
		require.False(t, isErr, got)
		assert.Contains(t, got, workflowrun.TruncationMarker)
		assert.Less(t, len(got), 256<<10)
	})

	t.Run("bad input in muster's words", func(t *testing.T) {
		text, isErr := musterCall(t, ms, "workflow_steps-test", map[string]any{})
		require.True(t, isErr)
		assert.Contains(t, text, `input validation failed: required field 'names' is missing`)
		text, isErr = musterCall(t, ms, "workflow_steps-test", map[string]any{"names": "ada"})
		require.True(t, isErr)
		assert.Contains(t, text, `wrong type: expected array, got string`)
	})
}
