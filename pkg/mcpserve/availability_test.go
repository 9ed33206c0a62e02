package mcpserve

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// With coretools.Options.WorkflowAvailability, a workflow's availability is judged
// at each call, as muster does, not read from the last verdict: the three
// workflow tools answer what it says, whatever the verdict says.
func TestWorkflowAvailabilityIsJudgedAtEachCall(t *testing.T) {
	judged := map[string][]string{} // name → missing tools; absent: available
	h := newHarness(t, func(o *setup) {
		o.core.WorkflowAvailability = func(k events.Key, _ string) (bool, []string, bool) {
			missing, ok := judged[k.Name]
			return !ok, missing, true
		}
	})
	declareAll(h)
	h.observe(greetKey, v1alpha1.WorkflowStatus{Valid: false, MissingTools: []string{"x_stale"}})
	cs := h.connect(PathDirect, musterProtocol, nil)
	assert.JSONEq(t, `{"name":"greet","available":true}`, text(t, call(t, cs, "core_workflow_available", map[string]any{"name": "greet"})),
		"judged now, though the last verdict found a tool missing")
	assert.JSONEq(t, `{"workflows":[{"name":"greet","available":true,"description":"Say hello"}]}`, text(t, call(t, cs, "core_workflow_list", nil)))
	got := decode[struct{ Workflow map[string]any }](t, call(t, cs, "core_workflow_get", map[string]any{"name": "greet"}))
	assert.Equal(t, true, got.Workflow["available"])
	assert.NotContains(t, got.Workflow, "missingTools")

	judged["greet"] = []string{"x_deep_tool"}
	assert.JSONEq(t, `{"name":"greet","available":false}`, text(t, call(t, cs, "core_workflow_available", map[string]any{"name": "greet"})))
	assert.JSONEq(t, `{"workflows":[{"name":"greet","available":false,"description":"Say hello"}]}`, text(t, call(t, cs, "core_workflow_list", nil)))
	got = decode[struct{ Workflow map[string]any }](t, call(t, cs, "core_workflow_get", map[string]any{"name": "greet"}))
	assert.Equal(t, false, got.Workflow["available"])
	assert.Equal(t, []any{"x_deep_tool"}, got.Workflow["missingTools"], "the tool missing down the chain, not the verdict's")
}
