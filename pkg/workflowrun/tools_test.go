package workflowrun_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// A workflow's tool is built once per definition: Tools returns the same
// pointer until the definition changes, and Refresh, comparing pointers,
// reports exactly the changes.
func TestAToolIsRebuiltOnlyWhenItsDefinitionChanges(t *testing.T) {
	changed := 0
	h := newHarness(t, workflowrun.Options{OnToolsChanged: func() { changed++ }})
	h.declare(wf("one", "  description: first\n  steps:\n    - {id: s, tool: x_fake_echo}\n"))
	h.declare(wf("two", "  steps:\n    - {id: s, tool: x_fake_echo}\n"))
	h.engine.Refresh()
	require.Equal(t, 1, changed)

	before := toolsByName(h.engine.Tools())
	require.Contains(t, before, "workflow_one")
	require.Contains(t, before, "workflow_two")
	h.engine.Refresh()
	assert.Equal(t, 1, changed, "nothing changed")
	after := toolsByName(h.engine.Tools())
	for name, tool := range before {
		assert.Same(t, tool, after[name], "%s was not rebuilt", name)
	}

	h.declare(wf("one", "  description: second\n  steps:\n    - {id: s, tool: x_fake_echo}\n"))
	h.engine.Refresh()
	assert.Equal(t, 2, changed, "a changed description is a changed tool")
	after = toolsByName(h.engine.Tools())
	assert.Equal(t, "second", after["workflow_one"].Description)
	assert.NotSame(t, before["workflow_one"], after["workflow_one"])
	assert.Same(t, before["workflow_two"], after["workflow_two"])
}

func toolsByName(tools []*mcp.Tool) map[string]*mcp.Tool {
	out := map[string]*mcp.Tool{}
	for _, t := range tools {
		out[t.Name] = t
	}
	return out
}

// RefreshWorkflows reads only the workflows it names: a reconcile of one
// workflow refreshes its tool without a pass over the others, and reports
// a change exactly when the named workflows' tools changed.
func TestRefreshWorkflowsReadsOnlyTheNamedWorkflows(t *testing.T) {
	changed := 0
	h := newHarness(t, workflowrun.Options{OnToolsChanged: func() { changed++ }})
	needy := h.declare(wf("needy", "  steps:\n    - {id: s, tool: x_git_status}\n"))
	h.declare(wf("two", "  steps:\n    - {id: s, tool: x_fake_echo}\n"))
	h.engine.Refresh()
	require.Equal(t, 1, changed)
	before := toolsByName(h.engine.Tools())
	require.NotContains(t, before, "workflow_needy", "invalid: x_git_status is missing")
	require.Contains(t, before, "workflow_two")

	h.cat.Set(events.NewKey(v1alpha1.KindMCPServer, "", "git"), "", []string{"status"})
	require.True(t, h.reconcile(needy).Valid)
	h.engine.RefreshWorkflows("two")
	assert.Equal(t, 1, changed, "two did not change")
	assert.NotContains(t, toolsByName(h.engine.Tools()), "workflow_needy", "needy was not read again")

	h.engine.RefreshWorkflows("needy", "unknown")
	assert.Equal(t, 2, changed, "needy became valid")
	after := toolsByName(h.engine.Tools())
	assert.Contains(t, after, "workflow_needy")
	assert.Same(t, before["workflow_two"], after["workflow_two"], "two's tool was kept")

	h.ix.RemoveFile("workflows/two.yaml")
	h.engine.RefreshWorkflows("two")
	assert.Equal(t, 3, changed, "two was deleted")
	assert.NotContains(t, toolsByName(h.engine.Tools()), "workflow_two")
	h.engine.Refresh()
	assert.Equal(t, 3, changed, "a full Refresh finds what RefreshWorkflows found")
}

// Tools lists the workflows' tools by name.
func TestToolsListsWorkflowsByName(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("b", "  steps:\n    - {id: s, tool: x_fake_echo}\n"))
	h.declare(wf("a", "  steps:\n    - {id: s, tool: x_fake_echo}\n"))
	h.engine.Refresh()
	assert.Equal(t, []string{"workflow_a", "workflow_b"},
		toolNames(h.engine.Tools()))
}
