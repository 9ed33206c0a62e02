package workflowrun_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
