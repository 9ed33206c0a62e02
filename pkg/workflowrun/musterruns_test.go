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

// stepIDs lists the ids of doc's steps[], in order.
func stepIDs(t *testing.T, doc map[string]any) []string {
	t.Helper()
	list, ok := doc["steps"].([]any)
	require.True(t, ok, "steps is a list: %v", doc)
	ids := []string{}
	for _, s := range list {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	return ids
}

// step returns the i-th of doc's steps[].
func step(t *testing.T, doc map[string]any, i int) map[string]any {
	t.Helper()
	list, ok := doc["steps"].([]any)
	require.True(t, ok, "steps is a list: %v", doc)
	require.Greater(t, len(list), i, "%v", doc)
	return list[i].(map[string]any)
}

// A forEach over one item runs its body once, recorded under the body
// step's own id, as muster records it; its result is kept as <id>_0 too.
// Over three, each iteration is a step of that id with its own result.
func TestForEachOverOneItemRecordsTheBodyStepsOwnID(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("single", `  args:
    names: {type: array, required: true}
  steps:
    - id: loop
      forEach:
        items: "{{ .input.names }}"
        as: name
        steps:
          - id: process
            tool: x_fake_json
            args: {said: "processed: {{ .vars.name }}"}
            store: true
`))
	doc, isError := h.run("single", map[string]any{"names": []any{"solo"}})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, "completed", doc["status"])
	assert.Equal(t, []string{"process"}, stepIDs(t, doc))
	assert.Equal(t, "completed", step(t, doc, 0)["status"])
	assert.Equal(t, map[string]any{"said": "processed: solo"}, step(t, doc, 0)["result"])

	exec := h.execution(doc)
	require.Len(t, exec.Steps, 1)
	assert.Equal(t, "process", exec.Steps[0].StepID)
	assert.Equal(t, "process_0", exec.Steps[0].StoredAs, "where templates find its result")

	doc, isError = h.run("single", map[string]any{"names": []any{"a", "b", "c"}})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, []string{"process", "process", "process"}, stepIDs(t, doc))
	for i, name := range []string{"a", "b", "c"} {
		assert.Equal(t, map[string]any{"said": "processed: " + name}, step(t, doc, i)["result"], "each iteration shows its own result")
	}

	doc, isError = h.run("single", map[string]any{"names": []any{}})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, []string{}, stepIDs(t, doc), "no items, no iterations")
}

// Items that are not a list fail the run in muster's words, naming the
// workflow, the step and the field.
func TestForEachOverItemsThatAreNotAList(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("bad-items", `  args:
    value: {type: string, required: true}
  steps:
    - id: loop
      forEach:
        items: "{{ .input.value }}"
        steps: [{id: noop, tool: x_fake_json}]
    - id: nothing
      forEach:
        items: "{{ .input.none }}"
        steps: [{id: noop2, tool: x_fake_json}]
`))
	doc, isError := h.run("bad-items", map[string]any{"value": "not-a-list"})
	require.True(t, isError)
	assert.Equal(t, `workflow bad-items, step loop, field forEach.items: items expression "{{ .input.value }}" resolved to string, expected a list`, doc["error"])
	assert.Equal(t, "failed", h.execution(doc).Status)
	assert.Zero(t, h.router.calls.Load(), "the body never ran")

	h.declare(wf("nil-items", `  steps:
    - id: loop
      forEach:
        items: "{{ .results.nothing }}"
        steps: [{id: noop, tool: x_fake_json}]
`))
	doc, isError = h.run("nil-items", nil)
	require.True(t, isError)
	assert.Contains(t, doc["error"], "failed to resolve items expression")
}

// onFailure runs when a step fails, never when the run succeeds, nor when
// only the output template fails (every step succeeded).
func TestOnFailureDoesNotRunWhenTheStepsSucceed(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("fine", `  steps:
    - {id: work, tool: x_fake_json, args: {v: 1}}
  onFailure:
    - {id: cleanup, tool: x_fake_json, args: {undo: true}}
`))
	doc, isError := h.run("fine", nil)
	require.False(t, isError, "%v", doc)
	assert.Equal(t, []string{"work"}, stepIDs(t, doc))
	assert.Equal(t, int64(1), h.router.calls.Load(), "only the step was called")
	assert.Len(t, h.execution(doc).Steps, 1)

	h.declare(wf("badoutput", `  steps:
    - {id: work, tool: x_fake_json, args: {v: 1}}
  onFailure:
    - {id: cleanup, tool: x_fake_json, args: {undo: true}}
  output:
    v: "{{ .results.missing.field }}"
`))
	doc, isError = h.run("badoutput", nil)
	require.True(t, isError)
	assert.Equal(t, []string{"work"}, stepIDs(t, doc))
	assert.Equal(t, int64(2), h.router.calls.Load(), "the step again, no cleanup")

	h.declare(wf("broken", `  steps:
    - {id: work, tool: x_fake_fail}
  onFailure:
    - {id: cleanup, tool: x_fake_json, args: {undo: true}}
`))
	doc, isError = h.run("broken", nil)
	require.True(t, isError)
	assert.Equal(t, []string{"work", "cleanup"}, stepIDs(t, doc), "a step failed: the cleanup ran")
}

// An output template renders a structured document, types kept, with the
// execution's id added as muster adds it; one that fails keeps every
// step's result recoverable, with output_error in muster's words.
func TestOutputTemplateStructuredAndBrokenRecoverable(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("shaped", `  steps:
    - {id: pods, tool: x_fake_json, args: {items: [{name: pod-a}, {name: pod-b}]}}
  output:
    count: "{{ len .results.pods.items }}"
    first: "{{ (index .results.pods.items 0).name }}"
    names: ["{{ (index .results.pods.items 0).name }}", "{{ (index .results.pods.items 1).name }}"]
    nested: {pods: "{{ .results.pods.items }}", fixed: 7}
`))
	doc, isError := h.run("shaped", nil)
	require.False(t, isError, "%v", doc)
	id := doc["execution_id"]
	assert.NotEmpty(t, id)
	assert.Equal(t, map[string]any{
		"execution_id": id,
		"count":        2.0,
		"first":        "pod-a",
		"names":        []any{"pod-a", "pod-b"},
		"nested":       map[string]any{"pods": []any{map[string]any{"name": "pod-a"}, map[string]any{"name": "pod-b"}}, "fixed": 7.0},
	}, doc)
	exec := h.execution(doc)
	assert.Equal(t, "completed", exec.Status)
	kept, err := json.Marshal(exec.Result)
	require.NoError(t, err)
	var keptDoc map[string]any
	require.NoError(t, json.Unmarshal(kept, &keptDoc))
	assert.Equal(t, doc, keptDoc, "the record keeps what the caller got")

	h.declare(wf("broken-output", `  steps:
    - {id: pods, tool: x_fake_json, args: {items: [{name: pod-a}]}}
  output:
    value: "{{ .results.missing.field }}"
`))
	doc, isError = h.run("broken-output", nil)
	require.True(t, isError)
	assert.Equal(t, "failed", doc["status"])
	assert.Equal(t, `failed to render output template: output.value: template: line 1:11: at <.results.missing.field>: map has no entry for key "missing"`, doc["output_error"])
	assert.Equal(t, `workflow broken-output, field output.value: failed to render output template: template: line 1:11: at <.results.missing.field>: map has no entry for key "missing"`, doc["error"])
	assert.Equal(t, map[string]any{"items": []any{map[string]any{"name": "pod-a"}}}, step(t, doc, 0)["result"],
		"the step's result is recoverable, though not marked output")
	exec = h.execution(doc)
	assert.Equal(t, "failed", exec.Status)
	require.NotNil(t, exec.Error)
	assert.Equal(t, doc["error"], *exec.Error)
}

// forEach and parallel results are referenced by later steps without any
// output flag: <id>_<index>, the plain id (the last iteration's), and the
// parallel siblings'. steps[] lists each iteration under its step's id.
func TestCompositeResultsAreReferencedWithoutAnOutputFlag(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("composite-ref", `  args:
    items: {type: array, required: true}
  steps:
    - id: loop
      forEach:
        items: "{{ .input.items }}"
        as: it
        steps:
          - {id: make, tool: x_fake_json, args: {said: "made-{{ .vars.it }}"}}
    - id: fan
      parallel:
        - {id: pa, tool: x_fake_json, args: {said: branch-A}}
        - {id: pb, tool: x_fake_json, args: {said: branch-B}}
    - id: summary
      tool: x_fake_json
      args:
        said: "i0={{ .results.make_0.said }} i1={{ .results.make_1.said }} last={{ .results.make.said }} a={{ .results.pa.said }} b={{ .results.pb.said }}"
      output: true
`))
	doc, isError := h.run("composite-ref", map[string]any{"items": []any{"x", "y"}})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, []string{"make", "make", "pa", "pb", "summary"}, stepIDs(t, doc))
	assert.Equal(t, map[string]any{"said": "i0=made-x i1=made-y last=made-y a=branch-A b=branch-B"}, step(t, doc, 4)["result"])
}

// A template that fails as the run renders it fails the run in muster's
// words ("failed to render arguments"), naming the workflow, the step, the
// field and the key.
func TestABadStepTemplateAtRunTime(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("bad-template", `  steps:
    - id: bad-step
      tool: x_fake_json
      args: {text: "{{ .context.non_existent_value }}"}
      store: true
`))
	doc, isError := h.run("bad-template", nil)
	require.True(t, isError)
	assert.Equal(t, `workflow bad-template, step bad-step, field args.text: failed to render arguments: template: line 1:11: at <.context.non_existent_value>: map has no entry for key "non_existent_value"`, doc["error"])
	assert.Zero(t, h.router.calls.Load(), "the tool was never called")
	assert.Equal(t, "failed", h.execution(doc).Status)
}

// A missing required input is answered in muster's words.
func TestAMissingRequiredInputInMustersWords(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("require-input", `  args:
    message: {type: string, required: true}
  steps:
    - {id: s1, tool: x_fake_json}
`))
	doc, isError := h.run("require-input", map[string]any{})
	require.True(t, isError)
	assert.Equal(t, `workflow require-input, field input.message: input validation failed: required field 'message' is missing`, doc["error"])
	assert.Zero(t, h.router.calls.Load())
	exec := h.execution(doc)
	assert.Equal(t, "failed", exec.Status)
	assert.Empty(t, exec.Steps)
}

// template_vars lists, as muster does, the input references of the
// templates the run rendered ("input.<name>"), in the order rendered, each
// once: not those of a skipped step, and [] when there are none.
func TestTemplateVarsAsMusterListsThem(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("param-templating", `  args:
    service_name: {type: string, required: true}
    message: {type: string, default: default message}
    unused: {type: string, default: x}
  steps:
    - id: echo-step
      tool: x_fake_json
      args:
        text: "Service {{ .input.service_name }} says: {{ .input.message }}"
        again: "{{.input.service_name}}"
      store: true
    - id: skipped
      tool: x_fake_json
      condition: {template: "false"}
      args: {text: "{{ .input.unused }}"}
`))
	doc, isError := h.run("param-templating", map[string]any{"service_name": "myservice"})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, []any{"input.service_name", "input.message"}, doc["template_vars"])
	assert.Equal(t, map[string]any{"text": "Service myservice says: default message", "again": "myservice"}, step(t, doc, 0)["result"])

	h.declare(wf("plain", "  steps:\n    - {id: s, tool: x_fake_json}\n"))
	text, isError := h.call(t.Context(), "plain", nil)
	require.False(t, isError, text)
	assert.Contains(t, text, `"template_vars":[]`, "an empty list, as muster's, not null")
}

// core_workflow_execution_get with step_id shows that step alone, with its
// timing; a forEach iteration is found by its step's id (the first) or by
// the name its result is kept under.
func TestAStepOfAnExecutionIsGotByItsID(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("specific-step", `  args:
    hosts: {type: array, default: [a, b]}
  steps:
    - {id: first_step, tool: x_fake_json, args: {n: 1}, store: true}
    - id: loop
      forEach:
        items: "{{ .input.hosts }}"
        steps: [{id: each, tool: x_fake_json, args: {host: "{{ .vars.item }}"}}]
    - {id: third_step, tool: x_fake_json, args: {n: 3}, store: true}
`))
	doc, isError := h.run("specific-step", nil)
	require.False(t, isError, "%v", doc)
	id := doc["execution_id"].(string)
	for stepID, want := range map[string]map[string]any{
		"first_step": {"n": 1.0},
		"third_step": {"n": 3.0},
		"each":       {"host": "a"},
		"each_1":     {"host": "b"},
	} {
		text, isError := h.tool(coretools.ToolExecutionGet, map[string]any{"execution_id": id, "step_id": stepID}, nil)
		require.False(t, isError, text)
		var view types.Execution
		require.NoError(t, json.Unmarshal([]byte(text), &view))
		require.Len(t, view.Steps, 1, stepID)
		assert.Equal(t, strings.TrimSuffix(stepID, "_1"), view.Steps[0].StepID)
		assert.Equal(t, want, view.Steps[0].Result, stepID)
		assert.Equal(t, "completed", view.Steps[0].Status)
		assert.False(t, view.Steps[0].StartedAt.IsZero())
		assert.Contains(t, text, `"duration_ms":`)
		assert.Nil(t, view.Result, "the workflow's result is left out")
		for _, other := range []string{"first_step", "third_step"} {
			if other != stepID {
				assert.NotContains(t, text, other, stepID)
			}
		}
	}
}
