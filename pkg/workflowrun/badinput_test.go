package workflowrun_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/workflowrun"
)

// Each bad input is an error naming the workflow, the step and the field,
// fails that run alone (the execution says so too), and leaves the engine
// serving the next run.
func TestBadInputNamesTheWorkflowTheStepAndTheField(t *testing.T) {
	h := newHarness(t, workflowrun.Options{MaxResultBytes: 1000})
	h.declare(wf("good", "  steps:\n    - {id: s, tool: x_fake_json, args: {ok: true}}\n"))
	for _, tc := range []struct {
		name, spec string
		args       map[string]any
		want       string
		// unavailable: the validator refused the workflow; the call fails
		// at once, with no execution.
		unavailable bool
	}{{
		name: "bad template", unavailable: true,
		spec: "  steps:\n    - {id: render, tool: x_fake_json, args: {x: \"{{ .input.name \"}}\n",
		want: `workflow bad is not available (step render: args.x: template: line 1: unclosed action)`,
	}, {
		name: "bad template in a forEach body's condition", unavailable: true,
		spec: "  steps:\n    - id: each\n      forEach:\n        items: \"{{ list 1 }}\"\n        steps:\n          - {id: body, tool: x_fake_json, condition: {template: \"{{ nosuchfunc }}\"}}\n",
		want: `workflow bad is not available (step each.body: condition.template: template: line 1: function "nosuchfunc" not defined)`,
	}, {
		name: "template failing as it runs",
		spec: "  args:\n    name: {type: string, default: x}\n  steps:\n    - {id: render, tool: x_fake_json, args: {x: \"{{ index .input.name 5 }}\"}}\n",
		want: `workflow bad, step render, field args.x: failed to render arguments: template: line 1:3: at <index .input.name 5>: error calling index: index out of range: 5`,
	}, {
		name: "missing key",
		spec: "  steps:\n    - {id: render, tool: x_fake_json, args: {deep: {x: \"{{ .results.nope.field }}\"}}}\n",
		want: `workflow bad, step render, field args.deep.x: failed to render arguments: template: line 1:11: at <.results.nope.field>: map has no entry for key "nope"`,
	}, {
		name: "missing required argument",
		spec: "  args:\n    name: {type: string, required: true}\n  steps:\n    - {id: s, tool: x_fake_json}\n",
		want: `workflow bad, field input.name: input validation failed: required field 'name' is missing`,
	}, {
		name: "wrong argument type",
		spec: "  args:\n    count: {type: integer}\n  steps:\n    - {id: s, tool: x_fake_json}\n",
		args: map[string]any{"count": "three"},
		want: `workflow bad, field input.count: wrong type: expected integer, got string`,
	}, {
		name: "a fraction for an integer",
		spec: "  args:\n    count: {type: integer}\n  steps:\n    - {id: s, tool: x_fake_json}\n",
		args: map[string]any{"count": 2.5},
		want: `workflow bad, field input.count: wrong type: expected integer, got number`,
	}, {
		name: "forEach items not an array",
		spec: "  args:\n    name: {type: string, default: x}\n  steps:\n    - id: each\n      forEach:\n        items: \"{{ .input.name }}\"\n        steps: [{id: s, tool: x_fake_json}]\n",
		want: `workflow bad, step each, field forEach.items: items expression "{{ .input.name }}" resolved to string, expected a list`,
	}, {
		name: "jsonPath matching nothing",
		spec: "  steps:\n    - id: gated\n      tool: x_fake_json\n      condition:\n        tool: x_fake_json\n        args: {a: 1}\n        expect:\n          jsonPath: {\"items[0].name\": x}\n",
		want: `workflow bad, step gated, field condition.expect.jsonPath.items[0].name: matches nothing in the result`,
	}, {
		name: "tool result too large",
		spec: "  steps:\n    - {id: huge, tool: x_fake_big, args: {bytes: 5000}}\n",
		want: `workflow bad, step huge, field result: the result of x_fake_big is 5000 bytes, more than the limit of 1000`,
	}, {
		name: "output template",
		spec: "  steps:\n    - {id: s, tool: x_fake_json}\n  output:\n    x: \"{{ .results.s.nope }}\"\n",
		want: `workflow bad, field output.x: failed to render output template: template: line 1:11: at <.results.s.nope>: map has no entry for key "nope"`,
	}, {
		name: "fromStep that did not run",
		spec: "  steps:\n    - id: s\n      tool: x_fake_json\n      condition:\n        fromStep: later\n        expect: {success: true}\n    - {id: later, tool: x_fake_json}\n",
		want: `workflow bad, step s, field condition.fromStep: step later has no result: it has not run, or was skipped`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h.declare(wf("bad", tc.spec))
			if tc.unavailable {
				text, isError := h.call(context.Background(), "bad", tc.args)
				assert.True(t, isError)
				assert.Equal(t, tc.want, text)
				return
			}
			doc, isError := h.run("bad", tc.args)
			require.True(t, isError, "%v", doc)
			assert.Equal(t, tc.want, doc["error"])
			assert.Equal(t, "failed", doc["status"])

			exec, ok := h.engine.Execution(doc["execution_id"].(string))
			require.True(t, ok)
			assert.Equal(t, "failed", exec.Status)
			require.NotNil(t, exec.Error)
			assert.Equal(t, tc.want, *exec.Error)

			good, isError := h.run("good", nil)
			require.False(t, isError, "nothing else is affected")
			assert.Equal(t, true, good["ok"])
		})
	}
}
