package main

// End to end: a workflow refused by the core tools is answered in muster's
// words, through muster's way of calling (call_tool on /mcp) and natively
// (/mcp/direct), by the real daemon; nothing is written. A hand-written
// file with the same problem keeps musterd's own words, naming the file
// and field, in its status.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestE2EWorkflowRefusalsInMustersWords(t *testing.T) {
	e := startFS(t)
	muster := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	direct := e.mcpClient(t, "/mcp/direct", "2025-06-18", nil)

	step := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"validate: no steps", "core_workflow_validate", map[string]any{"name": "w", "args": map[string]any{}, "steps": []any{}},
			"Validation failed: workflow must have at least one step"},
		{"validate: tool and forEach", "core_workflow_validate", map[string]any{"name": "w", "steps": []any{
			step("id", "conflict", "tool", "x_echo_echo", "forEach", map[string]any{"items": "{{ .input.items }}", "steps": []any{step("id", "sub", "tool", "x_echo_echo")}})}},
			"Validation failed: validation failed: steps: step 0 (conflict): tool is mutually exclusive with forEach/parallel"},
		{"validate: duplicate sub-step ids", "core_workflow_validate", map[string]any{"name": "w", "steps": []any{
			step("id", "fan", "parallel", []any{step("id", "dup", "tool", "t"), step("id", "dup", "tool", "t")})}},
			"Validation failed: step fan parallel: duplicate sub-step id 'dup'"},
		{"validate: template condition with a tool", "core_workflow_validate", map[string]any{"name": "w", "steps": []any{
			step("id", "gated", "tool", "t", "condition", map[string]any{"template": `{{ eq .input.env "prod" }}`, "tool": "t"})}},
			"Validation failed: validation failed: steps: step 0: invalid condition: condition.template is mutually exclusive with tool/fromStep"},
		{"create: no name", "core_workflow_create", map[string]any{"args": map[string]any{}, "steps": []any{}},
			"Failed to create workflow: name argument is required"},
		{"create: no steps argument", "core_workflow_create", map[string]any{"name": "w", "args": map[string]any{}},
			"Failed to create workflow: steps argument is required"},
		{"create: empty step id", "core_workflow_create", map[string]any{"name": "w", "steps": []any{step("id", "", "tool", "core_workflow_list")}},
			"Failed to create workflow: validation failed: steps: step 0: id cannot be empty"},
		{"create: no steps", "core_workflow_create", map[string]any{"name": "w", "steps": []any{}},
			"Failed to create workflow: validation failed: workflow must have at least one step"},
		{"create: duplicate step ids", "core_workflow_create", map[string]any{"name": "w", "steps": []any{
			step("id", "step-1", "tool", "core_service_list"), step("id", "step-1", "tool", "core_service_list")}},
			"Failed to create workflow: validation failed: duplicate step ID 'step-1' found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, isErr := musterCall(t, muster, tc.tool, tc.args)
			assert.True(t, isErr, out)
			assert.Equal(t, tc.want, out, "through call_tool")
			out, isErr = callTool(t, direct, tc.tool, tc.args)
			assert.True(t, isErr, out)
			assert.Equal(t, tc.want, out, "natively")
		})
	}
	entries, err := os.ReadDir(filepath.Join(e.config, "workflows"))
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing refused is written")

	// The same problem in a file the user wrote: musterd's words, naming
	// the file, line and field.
	e.write(t, "workflows/handmade.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: handmade
spec:
  steps:
    - id: nothing
`)
	r := e.waitWorkflow(t, "handmade", "Error", "")
	assert.Equal(t, "workflows/handmade.yaml:7: spec.steps[0]: exactly one of tool, forEach, or parallel must be set, got none", r.Reconcile.LastError)
}

// As in muster's filesystem mode, a workflow may be named with
// underscores: created through call_tool, it runs as workflow_<name> and
// the API finds it.
func TestE2EAWorkflowNamedWithUnderscoresRuns(t *testing.T) {
	e := startFS(t)
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	const name = "special-chars-workflow_123"
	out, isErr := musterCall(t, cs, "core_workflow_create", map[string]any{"name": name,
		"steps": []any{map[string]any{"id": "special_step", "tool": "core_service_list"}}})
	require.False(t, isErr, out)
	e.waitWorkflow(t, name, "Synced", "core_service_list")
	eventually(t, name+" can run", func() bool {
		out, _ := musterCall(t, cs, "core_workflow_available", map[string]any{"name": name})
		return strings.Contains(out, `"available":true`)
	})
	out, isErr = musterCall(t, cs, "workflow_"+name, nil)
	require.False(t, isErr, out)
	assert.Contains(t, out, `"workflow":"`+name+`"`)
	_, err := os.Stat(filepath.Join(e.config, "workflows", name+".yaml"))
	assert.NoError(t, err)
}
