package coretools

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
)

// Every check of a definition is published, whether it was only a
// validate, a create refused, or a create written.
func TestEveryCheckOfADefinitionIsPublished(t *testing.T) {
	h := newHarness(t)
	var got []events.DefinitionValidated
	h.p.opts.Publish = func(e events.Event) { got = append(got, e.(events.DefinitionValidated)) }
	step := func(id string) map[string]any { return map[string]any{"id": id, "tool": "core_service_list"} }

	_, isErr := h.call(t, "core_workflow_validate", map[string]any{"name": "ok", "steps": []any{step("a")}})
	assert.False(t, isErr)
	msg, isErr := h.call(t, "core_workflow_create", map[string]any{"name": "dupes", "steps": []any{step("a"), step("a")}})
	assert.True(t, isErr)
	assert.Contains(t, msg, "duplicate step ID")
	_, isErr = h.call(t, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{step("a")}})
	assert.False(t, isErr)
	_, isErr = h.call(t, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{step("a")}})
	assert.True(t, isErr, "exists: the definition was valid, as told before the write")
	_, isErr = h.call(t, "core_mcpserver_validate", map[string]any{"name": "s", "type": "stdio", "command": "x", "env": map[string]any{"TOKEN": "s3cr3t-value"}, "timeout": "x"})
	assert.True(t, isErr)

	type check struct{ key, request, err string }
	var checks []check
	for _, e := range got {
		checks = append(checks, check{e.Key.String(), e.Request, e.Error})
		assert.NotContains(t, e.Error, "s3cr3t-value")
	}
	if assert.Len(t, checks, 5) {
		assert.Equal(t, check{"Workflow/default/ok", "validate", ""}, checks[0])
		assert.Equal(t, "Workflow/default/dupes", checks[1].key)
		assert.Equal(t, "create", checks[1].request)
		assert.Contains(t, checks[1].err, "duplicate step ID")
		assert.Equal(t, check{"Workflow/default/flow", "create", ""}, checks[2])
		assert.Equal(t, check{"Workflow/default/flow", "create", ""}, checks[3])
		assert.Equal(t, "MCPServer/default/s", checks[4].key)
		assert.NotEmpty(t, checks[4].err)
	}
}
