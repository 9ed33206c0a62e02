package main

// End to end: muster's events (core_events) as muster's CLI reads them,
// translated from the pipeline's by the real daemon: a server's create,
// update and delete through the core tools, a workflow refused, created,
// run with its steps, and a run that fails.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// musterEvent is one of core_events' rows.
type musterEvent struct {
	Timestamp    string `json:"timestamp"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	Namespace    string `json:"namespace"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
	Type         string `json:"type"`
}

func TestE2EMustersEventsThroughCoreEvents(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "json,fail")...))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)

	query := func(args map[string]any) []musterEvent {
		t.Helper()
		out, isErr := musterCall(t, cs, "core_events", args)
		require.False(t, isErr, out)
		var list []musterEvent
		require.NoError(t, json.Unmarshal([]byte(out), &list), out)
		return list
	}
	reasons := func(list []musterEvent) []string {
		var out []string
		for _, ev := range list {
			out = append(out, ev.Reason)
		}
		return out
	}

	// The server found running: its lifecycle in muster's words.
	eventually(t, "fake's start is told", func() bool {
		return slicesContain(reasons(query(map[string]any{"resourceName": "fake"})), "MCPServerStarted", "MCPServerToolsDiscovered", "MCPServerCreated")
	})

	// A server created, updated and deleted through the core tools; each
	// answer comes once the change is in force, and its event is listed.
	srv := map[string]any{"name": "remote", "type": "streamable-http", "url": "https://api.example.com/mcp", "autoStart": false}
	for _, step := range []struct{ tool, reason, message string }{
		{"core_mcpserver_create", "MCPServerCreated", "MCPServer remote successfully created in namespace default"},
		{"core_mcpserver_update", "MCPServerUpdated", "MCPServer remote successfully updated in namespace default"},
		{"core_mcpserver_delete", "MCPServerDeleted", "MCPServer remote successfully deleted from namespace default"},
	} {
		args := srv
		switch step.tool {
		case "core_mcpserver_update":
			// An update that changes nothing is no change to musterd.
			args = map[string]any{"name": "remote", "type": "streamable-http", "url": "https://updated.example.com/mcp", "autoStart": false}
		case "core_mcpserver_delete":
			args = map[string]any{"name": "remote"}
		}
		out, isErr := musterCall(t, cs, step.tool, args)
		require.False(t, isErr, out)
		list := query(map[string]any{"resourceType": "MCPServer", "resourceName": "remote"})
		require.NotEmpty(t, list, step.tool)
		assert.Equal(t, musterEvent{Timestamp: list[0].Timestamp, ResourceType: "MCPServer", ResourceName: "remote", Namespace: "default",
			Reason: step.reason, Message: step.message, Type: "Normal"}, list[0], "the newest first")
	}

	// A workflow refused before anything is written.
	out, isErr := musterCall(t, cs, "core_workflow_create", map[string]any{"name": "dupes", "steps": []any{
		map[string]any{"id": "a", "tool": "x_fake_json"}, map[string]any{"id": "a", "tool": "x_fake_json"}}})
	require.True(t, isErr, out)
	warnings := query(map[string]any{"resourceType": "Workflow", "resourceName": "dupes", "eventType": "Warning"})
	require.Len(t, warnings, 1)
	assert.Equal(t, "WorkflowValidationFailed", warnings[0].Reason)
	assert.Contains(t, warnings[0].Message, "Workflow dupes validation failed: ")
	assert.Contains(t, warnings[0].Message, "duplicate step ID 'a' found")

	// A workflow created, then run: the run's and its steps' events.
	out, isErr = musterCall(t, cs, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{
		map[string]any{"id": "first", "tool": "x_fake_json"}, map[string]any{"id": "second", "tool": "x_fake_json"}}})
	require.False(t, isErr, out)
	assert.Equal(t, []string{"WorkflowCreated", "WorkflowValidationSucceeded"}, reasons(query(map[string]any{"resourceName": "flow"})))
	assert.Equal(t, "Workflow flow successfully created with 2 steps", query(map[string]any{"resourceName": "flow", "limit": 1})[0].Message)
	eventually(t, "flow can run", func() bool {
		out, _ := musterCall(t, cs, "core_workflow_available", map[string]any{"name": "flow"})
		return strings.Contains(out, `"available":true`)
	})
	out, isErr = musterCall(t, cs, "workflow_flow", nil)
	require.False(t, isErr, out)
	list := query(map[string]any{"resourceName": "flow"})
	got := reasons(list)
	assert.Equal(t, []string{"WorkflowExecutionCompleted", "WorkflowExecutionTracked", "WorkflowStepCompleted", "WorkflowStepStarted",
		"WorkflowStepCompleted", "WorkflowStepStarted", "WorkflowExecutionStarted", "WorkflowCreated", "WorkflowValidationSucceeded"}, got)
	var messages []string
	for _, ev := range list {
		messages = append(messages, ev.Message)
	}
	assert.Contains(t, messages, "Workflow flow step first started (tool: x_fake_json)")
	assert.Contains(t, messages, "Workflow flow step second completed successfully")
	assert.Len(t, query(map[string]any{"resourceName": "flow", "limit": 3}), 3, "limit")

	// A run that fails: a Warning with the error.
	out, isErr = musterCall(t, cs, "core_workflow_create", map[string]any{"name": "broken", "steps": []any{
		map[string]any{"id": "boom", "tool": "x_fake_fail"}}})
	require.False(t, isErr, out)
	eventually(t, "broken can run", func() bool {
		out, _ := musterCall(t, cs, "core_workflow_available", map[string]any{"name": "broken"})
		return strings.Contains(out, `"available":true`)
	})
	_, isErr = musterCall(t, cs, "workflow_broken", nil)
	require.True(t, isErr)
	warnings = query(map[string]any{"resourceName": "broken", "eventType": "Warning"})
	assert.Equal(t, []string{"WorkflowExecutionFailed", "WorkflowStepFailed"}, reasons(warnings))
	assert.Contains(t, warnings[0].Message, "Workflow broken execution failed: workflow broken, step boom: x_fake_fail returned an error")

	// muster's CLI filters by a type it does not know: nothing, no error.
	assert.Empty(t, query(map[string]any{"resourceType": "DoesNotExist"}))
}

// slicesContain reports whether list holds every one of want.
func slicesContain(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, s := range list {
			found = found || s == w
		}
		if !found {
			return false
		}
	}
	return true
}
