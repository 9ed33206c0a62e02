package coretools

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// As in muster's filesystem mode, a workflow may be named with
// underscores: it is created, in force under that name, and deleted.
func TestAWorkflowNamedWithUnderscores(t *testing.T) {
	h := newHarness(t)
	name := "special-chars-workflow_123"
	msg, isErr := h.call(t, "core_workflow_create", map[string]any{"name": name, "steps": steps(step("special_step", "tool", "core_service_list"))})
	assert.False(t, isErr, msg)
	assert.Equal(t, "Workflow created successfully", msg)
	_, ok := h.index.Get(events.NewKey(v1alpha1.KindWorkflow, "", name))
	assert.True(t, ok)
	msg, isErr = h.call(t, "core_workflow_delete", map[string]any{"name": name})
	assert.False(t, isErr, msg)
	assert.Equal(t, "Workflow '"+name+"' deleted successfully", msg)
}
