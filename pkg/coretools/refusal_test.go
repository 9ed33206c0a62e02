package coretools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// step and sub build the steps of the requests below.
func step(id string, kv ...any) map[string]any {
	m := map[string]any{"id": id}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func steps(s ...map[string]any) []any {
	out := make([]any, len(s))
	for i, m := range s {
		out[i] = m
	}
	return out
}

// core_workflow_validate refuses a workflow with muster's text for each
// problem muster checks, exactly as muster's workflow api adapter says it:
// the first problem muster finds, in the order it checks.
func TestWorkflowValidateAnswersInMustersWords(t *testing.T) {
	h := newHarness(t)
	items := "{{ .input.items }}"
	loop := func(kv ...any) map[string]any { return step("loop", append([]any{"forEach"}, kv...)...) }
	forEach := func(body ...any) map[string]any {
		m := map[string]any{"items": items}
		if len(body) > 0 {
			m["steps"] = body[0]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"no steps argument", map[string]any{"args": map[string]any{}},
			"Validation failed: steps argument is required"},
		{"no steps", map[string]any{"steps": []any{}},
			"Validation failed: workflow must have at least one step"},
		{"step id empty", map[string]any{"steps": steps(step("", "tool", "t"))},
			"Validation failed: validation failed: steps: step 0: id cannot be empty"},
		{"step id missing", map[string]any{"steps": []any{map[string]any{"tool": "t"}}},
			"Validation failed: validation failed: steps: step 0: id is required"},
		{"step of no kind", map[string]any{"steps": steps(step("nothing"))},
			"Validation failed: validation failed: steps: step 0 (nothing): one of tool, forEach, or parallel is required"},
		{"step of tool and forEach", map[string]any{"steps": steps(step("conflict", "tool", "t", "forEach", forEach(steps(step("sub", "tool", "t")))))},
			"Validation failed: validation failed: steps: step 0 (conflict): tool is mutually exclusive with forEach/parallel"},
		{"step of tool and parallel", map[string]any{"steps": steps(step("conflict", "tool", "t", "parallel", steps(step("p", "tool", "t"))))},
			"Validation failed: validation failed: steps: step 0 (conflict): tool is mutually exclusive with forEach/parallel"},
		{"step of forEach and parallel", map[string]any{"steps": steps(step("conflict", "forEach", forEach(steps(step("sub", "tool", "t"))), "parallel", steps(step("p", "tool", "t"))))},
			"Validation failed: validation failed: steps: step 0 (conflict): forEach and parallel are mutually exclusive"},
		{"empty tool", map[string]any{"steps": steps(step("a", "tool", ""))},
			"Validation failed: validation failed: steps: step 0 (a): tool cannot be empty"},
		{"forEach without items", map[string]any{"steps": steps(loop(map[string]any{"steps": steps(step("sub", "tool", "t"))}))},
			"Validation failed: validation failed: steps: step 0 (loop): invalid forEach: items is required and must be a template string"},
		{"forEach of no steps", map[string]any{"steps": steps(loop(forEach([]any{})))},
			"Validation failed: validation failed: steps: step 0 (loop): invalid forEach: steps is required and must contain at least one sub-step"},
		{"forEach without steps", map[string]any{"steps": steps(loop(forEach()))},
			"Validation failed: validation failed: steps: step 0 (loop): invalid forEach: steps is required and must contain at least one sub-step"},
		{"forEach sub-step without id", map[string]any{"steps": steps(loop(forEach([]any{map[string]any{"tool": "t"}})))},
			"Validation failed: validation failed: steps: step 0 (loop): invalid forEach: sub-step 0: id is required"},
		{"forEach sub-step without tool", map[string]any{"steps": steps(loop(forEach(steps(step("sub")))))},
			"Validation failed: validation failed: steps: step 0 (loop): invalid forEach: sub-step 0 (sub): tool is required"},
		{"parallel sub-step without tool", map[string]any{"steps": steps(step("fan", "parallel", steps(step("ok", "tool", "t"), step("sub"))))},
			"Validation failed: validation failed: steps: step 0 (fan): invalid parallel: sub-step 1 (sub): tool is required"},
		{"parallel sub-step condition", map[string]any{"steps": steps(step("fan", "parallel", steps(step("sub", "tool", "t", "condition", map[string]any{"tool": "t", "fromStep": "x"}))))},
			"Validation failed: validation failed: steps: step 0 (fan): invalid parallel: sub-step 0 (sub): invalid condition: condition: tool and fromStep are mutually exclusive (set exactly one of template, tool, or fromStep)"},
		{"duplicate step id", map[string]any{"steps": steps(step("a", "tool", "t"), step("a", "tool", "t"))},
			"Validation failed: duplicate step ID 'a' found"},
		{"duplicate forEach sub-step id", map[string]any{"steps": steps(loop(forEach(steps(step("dup", "tool", "t"), step("dup", "tool", "t")))))},
			"Validation failed: step loop forEach: duplicate sub-step id 'dup'"},
		{"duplicate parallel sub-step id", map[string]any{"steps": steps(step("fan", "parallel", steps(step("dup", "tool", "t"), step("dup", "tool", "t"))))},
			"Validation failed: step fan parallel: duplicate sub-step id 'dup'"},
		{"duplicate onFailure sub-step id", map[string]any{"steps": steps(step("a", "tool", "t")), "onFailure": steps(step("dup", "tool", "t"), step("dup", "tool", "t"))},
			"Validation failed: onFailure: duplicate sub-step id 'dup'"},
		{"condition of template and tool", map[string]any{"steps": steps(step("gated", "tool", "t", "condition", map[string]any{"template": "{{ true }}", "tool": "t"}))},
			"Validation failed: validation failed: steps: step 0: invalid condition: condition.template is mutually exclusive with tool/fromStep"},
		{"condition of template and fromStep", map[string]any{"steps": steps(step("gated", "tool", "t", "condition", map[string]any{"template": "{{ true }}", "fromStep": "a"}))},
			"Validation failed: validation failed: steps: step 0: invalid condition: condition.template is mutually exclusive with tool/fromStep"},
		{"condition of nothing", map[string]any{"steps": steps(step("gated", "tool", "t", "condition", map[string]any{"expect": map[string]any{"success": true}}))},
			"Validation failed: validation failed: steps: step 0: invalid condition: condition requires exactly one of template, tool, or fromStep"},
		{"condition of tool and fromStep", map[string]any{"steps": steps(step("gated", "tool", "t", "condition", map[string]any{"tool": "t", "fromStep": "a", "expect": map[string]any{"success": true}}))},
			"Validation failed: validation failed: steps: step 0: invalid condition: condition: tool and fromStep are mutually exclusive (set exactly one of template, tool, or fromStep)"},
		{"condition without expectation", map[string]any{"steps": steps(step("gated", "tool", "t", "condition", map[string]any{"fromStep": "a"}))},
			"Validation failed: validation failed: steps: step 0: invalid condition: a tool or fromStep condition requires expect or expectNot"},
		{"onFailure sub-step without id", map[string]any{"steps": steps(step("a", "tool", "t")), "onFailure": []any{map[string]any{"tool": "t"}}},
			"Validation failed: validation failed: onFailure: sub-step 0: id is required"},
		{"onFailure sub-step without tool", map[string]any{"steps": steps(step("a", "tool", "t")), "onFailure": steps(step("undo"))},
			"Validation failed: validation failed: onFailure: sub-step 0 (undo): tool is required"},
		{"argument without type", map[string]any{"args": map[string]any{"who": map[string]any{"required": true}}, "steps": steps(step("a", "tool", "t"))},
			"Validation failed: validation failed: args: argument who: type is required"},

		// The first problem in muster's order: it reads every step
		// before it looks for duplicates, and a step's id before its
		// kind, forEach before parallel, its kind before its condition.
		{"reading before validating", map[string]any{"steps": steps(step("a", "tool", "t"), step("a", "tool", "t"), step("b"))},
			"Validation failed: validation failed: steps: step 2 (b): one of tool, forEach, or parallel is required"},
		{"steps in order", map[string]any{"steps": steps(step("a"), step("", "tool", "t"))},
			"Validation failed: validation failed: steps: step 0 (a): one of tool, forEach, or parallel is required"},
		{"a step's id first", map[string]any{"steps": []any{map[string]any{"condition": map[string]any{"fromStep": "x"}}}},
			"Validation failed: validation failed: steps: step 0: id is required"},
		{"kind before condition", map[string]any{"steps": steps(step("a", "condition", map[string]any{"fromStep": "x"}))},
			"Validation failed: validation failed: steps: step 0 (a): one of tool, forEach, or parallel is required"},
		{"one of before expectation", map[string]any{"steps": steps(step("a", "tool", "t", "condition", map[string]any{"tool": "t", "fromStep": "x"}))},
			"Validation failed: validation failed: steps: step 0: invalid condition: condition: tool and fromStep are mutually exclusive (set exactly one of template, tool, or fromStep)"},
		{"arguments before steps", map[string]any{"args": map[string]any{"who": map[string]any{}}, "steps": steps(step("a"))},
			"Validation failed: validation failed: args: argument who: type is required"},
		{"steps before onFailure", map[string]any{"steps": steps(step("a")), "onFailure": steps(step("undo"))},
			"Validation failed: validation failed: steps: step 0 (a): one of tool, forEach, or parallel is required"},
		{"a group's sub-steps in order", map[string]any{"steps": steps(step("fan", "parallel", steps(step("x"), map[string]any{"tool": "t"})))},
			"Validation failed: validation failed: steps: step 0 (fan): invalid parallel: sub-step 0 (x): tool is required"},

		// What muster does not check keeps musterd's words, told only when
		// muster would have found nothing.
		{"musterd's own check", map[string]any{"steps": steps(step("a b", "tool", "t"))},
			`Validation failed: spec.steps[0].id: "a b" does not match ^[a-zA-Z0-9_-]+$`},
		{"an id used again in another group", map[string]any{"steps": steps(step("a", "tool", "t"), step("fan", "parallel", steps(step("a", "tool", "t"))))},
			`Validation failed: spec.steps[1].parallel[0].id: duplicate step id "a" (first used at spec.steps[0].id)`},
		{"muster's before musterd's", map[string]any{"steps": steps(step("a b", "tool", "t"), step("c"))},
			"Validation failed: validation failed: steps: step 1 (c): one of tool, forEach, or parallel is required"},
		{"the decoder's words", map[string]any{"steps": steps(step("a", "tool", "t", "retries", 3.0))},
			"Validation failed: spec.steps[0].retries: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"name": "w"}
			for k, v := range tc.args {
				args[k] = v
			}
			msg, isErr := h.call(t, "core_workflow_validate", args)
			assert.True(t, isErr, msg)
			assert.Equal(t, tc.want, msg)
		})
	}
}

// create and update wrap muster's texts as muster's do; the event of the
// check carries muster's text too.
func TestWorkflowWritesAnswerInMustersWords(t *testing.T) {
	h := newHarness(t)
	var told []events.DefinitionValidated
	h.p.opts.Publish = func(e events.Event) { told = append(told, e.(events.DefinitionValidated)) }
	ok := steps(step("a", "tool", "t"))
	_, isErr := h.call(t, "core_workflow_create", map[string]any{"name": "flow", "steps": ok})
	require.False(t, isErr)
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want, why  string
	}{
		{"create without name", "core_workflow_create", map[string]any{"steps": ok},
			"Failed to create workflow: name argument is required", ""},
		{"create with an empty name", "core_workflow_create", map[string]any{"name": "", "steps": ok},
			"Failed to create workflow: name argument is required", ""},
		{"validate without name", "core_workflow_validate", map[string]any{"steps": ok},
			"Validation failed: name argument is required", ""},
		{"update without name", "core_workflow_update", map[string]any{"steps": ok},
			"Failed to update workflow: validation failed: name argument is required", ""},
		{"create without steps", "core_workflow_create", map[string]any{"name": "w", "args": map[string]any{}},
			"Failed to create workflow: steps argument is required", "steps argument is required"},
		{"create of no steps", "core_workflow_create", map[string]any{"name": "w", "steps": []any{}},
			"Failed to create workflow: validation failed: workflow must have at least one step", "workflow must have at least one step"},
		{"create of a step without id", "core_workflow_create", map[string]any{"name": "w", "steps": steps(step("", "tool", "t"))},
			"Failed to create workflow: validation failed: steps: step 0: id cannot be empty", "validation failed: steps: step 0: id cannot be empty"},
		{"create of duplicate steps", "core_workflow_create", map[string]any{"name": "w", "steps": steps(step("a", "tool", "t"), step("a", "tool", "t"))},
			"Failed to create workflow: validation failed: duplicate step ID 'a' found", "duplicate step ID 'a' found"},
		{"update of no steps", "core_workflow_update", map[string]any{"name": "flow", "steps": []any{}},
			"Failed to update workflow: validation failed: workflow must have at least one step", "workflow must have at least one step"},
		{"update of a step of no kind", "core_workflow_update", map[string]any{"name": "flow", "steps": steps(step("x"))},
			"Failed to update workflow: validation failed: validation failed: steps: step 0 (x): one of tool, forEach, or parallel is required",
			"validation failed: steps: step 0 (x): one of tool, forEach, or parallel is required"},
		{"update keeps the declared steps it is not given", "core_workflow_update", map[string]any{"name": "flow", "onFailure": steps(step("undo"))},
			"Failed to update workflow: validation failed: validation failed: onFailure: sub-step 0 (undo): tool is required",
			"validation failed: onFailure: sub-step 0 (undo): tool is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			told = nil
			msg, isErr := h.call(t, tc.tool, tc.args)
			assert.True(t, isErr, msg)
			assert.Equal(t, tc.want, msg)
			if tc.why == "" {
				assert.Empty(t, told, "a request without a name checks no definition")
				return
			}
			if assert.Len(t, told, 1) {
				assert.Equal(t, tc.why, told[0].Error)
			}
		})
	}
}
