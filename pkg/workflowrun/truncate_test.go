package workflowrun_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// execution returns the record of the run that answered doc.
func (h *harness) execution(doc map[string]any) *types.Execution {
	h.t.Helper()
	id, _ := doc["execution_id"].(string)
	require.NotEmpty(h.t, id, "the result names its execution: %v", doc)
	exec, ok := h.engine.Execution(id)
	require.True(h.t, ok)
	return exec
}

// truncatedInput is what an input replaced by the marker becomes.
var truncatedInput = map[string]any{"_truncated": workflowrun.TruncationMarker}

// A record within its bound is kept whole; one over it has every payload
// larger than an eighth of the bound replaced by muster's marker, and says
// so. The run's own result is whole either way.
func TestARecordOverItsBoundHasItsLargePayloadsReplaced(t *testing.T) {
	h := newHarness(t, workflowrun.Options{MaxRecordBytes: 2000})
	h.declare(wf("small", "  steps:\n    - {id: s, tool: x_fake_json, args: {text: short}}\n"))
	doc, isError := h.run("small", nil)
	require.False(t, isError)
	exec := h.execution(doc)
	assert.False(t, exec.Truncated)
	assert.Equal(t, map[string]any{"text": "short"}, exec.Steps[0].Result)

	long := strings.Repeat("y", 600)
	h.declare(wf("wordy", `  args:
    note: {type: string}
  steps:
    - {id: big, tool: x_fake_json, args: {text: "`+long+`"}}
    - {id: small, tool: x_fake_json, args: {text: short}}
`))
	doc, isError = h.run("wordy", map[string]any{"note": "tiny"})
	require.False(t, isError)
	exec = h.execution(doc)
	assert.True(t, exec.Truncated)
	assert.Equal(t, workflowrun.TruncationMarker, exec.Steps[0].Result)
	assert.Equal(t, truncatedInput, exec.Steps[0].Input)
	assert.Equal(t, map[string]any{"text": "short"}, exec.Steps[1].Result, "payloads under an eighth of the bound are kept")
	assert.Equal(t, map[string]any{"note": "tiny"}, exec.Input)
	data, err := json.Marshal(exec)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(data), 2000)
	assert.Contains(t, string(data), `"truncated":true`)

	text, isError := h.tool(coretools.ToolExecutionGet, map[string]any{"execution_id": doc["execution_id"]}, nil)
	require.False(t, isError)
	assert.Contains(t, text, "[truncated: payload exceeded retention size limit]", "core_workflow_execution_get shows the marker")
}

// musterd records every step's input and result, so payloads each under
// an eighth of the bound can add up past it: then the largest are replaced
// until the record fits.
func TestManySmallPayloadsAreReplacedLargestFirstUntilTheRecordFits(t *testing.T) {
	const limit = 4000
	h := newHarness(t, workflowrun.Options{MaxRecordBytes: limit})
	h.declare(wf("many", `  args:
    sizes: {type: array}
  steps:
    - id: loop
      forEach:
        items: "{{ .input.sizes }}"
        steps: [{id: s, tool: x_fake_json, args: {text: "{{ repeat (int .vars.item) \"z\" }}"}}]
`))
	doc, isError := h.run("many", map[string]any{"sizes": []any{300, 400, 350, 420, 310}})
	require.False(t, isError, "%v", doc)
	exec := h.execution(doc)
	assert.True(t, exec.Truncated)
	data, err := json.Marshal(exec)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(data), limit)

	var kept []int
	for i, s := range exec.Steps {
		if s.Result != workflowrun.TruncationMarker {
			kept = append(kept, i)
		}
	}
	assert.NotEmpty(t, kept, "only as many as needed are replaced")
	assert.Less(t, len(kept), len(exec.Steps))
	// The largest went first: 420 (step 3) and 400 (step 1) before 300.
	assert.Equal(t, workflowrun.TruncationMarker, exec.Steps[3].Result)
	assert.Equal(t, truncatedInput, exec.Steps[3].Input)
	assert.Contains(t, kept, 0, "the smallest is kept")
}
