package workflow_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
)

func wfDoc(name, steps string) string {
	return "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: " + name + "\nspec:\n  steps:\n" + steps
}

func TestAWorkflowMayCallDeclaredWorkflowsAndBuiltinToolsButNotItself(t *testing.T) {
	h := newHarness()
	h.r = workflow.New(h.ix, h.cat, workflow.WithBuiltinTools(func(tool string) bool { return tool == "core_workflow_list" }))
	outer := events.NewKey(v1alpha1.KindWorkflow, "", "outer")
	h.declare(t, "workflows/outer.yaml", wfDoc("outer", "    - {id: a, tool: workflow_inner}\n    - {id: b, tool: core_workflow_list}\n    - {id: c, tool: core_nope}\n"), outer)
	_, st := h.reconcile(t, outer)
	assert.Equal(t, []string{"core_nope", "workflow_inner"}, st.MissingTools, "inner is not declared yet; core_nope is no builtin")

	inner := events.NewKey(v1alpha1.KindWorkflow, "", "inner")
	h.declare(t, "workflows/inner.yaml", wfDoc("inner", "    - {id: a, tool: workflow_outer}\n"), inner)
	_, st = h.reconcile(t, outer)
	assert.Equal(t, []string{"core_nope"}, st.MissingTools)
	assert.Contains(t, st.ValidationErrors, "calls itself: outer → inner → outer")
	_, st = h.reconcile(t, inner)
	assert.False(t, st.Valid)
	assert.Equal(t, []string{
		"step a (through outer): tool core_nope is not offered by any running server", // what outer needs, inner needs
		"calls itself: inner → outer → inner",
	}, st.ValidationErrors)
	assert.Equal(t, []string{"core_nope"}, st.MissingTools)
	assert.Equal(t, workflow.ReasonToolsMissing, st.Conditions[0].Reason)

	// With outer's own tools all offered, the cycle alone is left.
	h.declare(t, "workflows/outer.yaml", wfDoc("outer", "    - {id: a, tool: workflow_inner}\n    - {id: b, tool: core_workflow_list}\n"), outer)
	_, st = h.reconcile(t, inner)
	assert.False(t, st.Valid)
	assert.Equal(t, []string{"calls itself: inner → outer → inner"}, st.ValidationErrors)
	assert.Equal(t, workflow.ReasonInvalid, st.Conditions[0].Reason)
	assert.Equal(t, "calls itself: inner → outer → inner", st.Conditions[0].Message)
}

func TestATemplateThatDoesNotParseMakesTheWorkflowInvalid(t *testing.T) {
	h := newHarness()
	h.cat.Set(git, "", []string{"status"})
	k := events.NewKey(v1alpha1.KindWorkflow, "", "tpl")
	h.declare(t, "workflows/tpl.yaml", wfDoc("tpl", `    - id: a
      tool: x_git_status
      args: {ok: "{{ .input.x | upper }}", bad: {deep: ["{{ .input.x "]}}
      condition:
        tool: x_git_status
        expect:
          jsonPath: {"{{ .result.x": 1, y: "{{ nosuch }}"}
    - id: each
      forEach:
        items: "{{ range }}"
        steps: [{id: body, tool: x_git_status}]
  output:
    o: "{{ end }}"
`), k)
	_, st := h.reconcile(t, k)
	require.False(t, st.Valid)
	assert.Equal(t, []string{
		"step a: args.bad.deep[0]: template: line 1: unclosed action",
		"step a: condition.expect.jsonPath: template: line 1: unclosed action",
		`step a: condition.expect.jsonPath.y: template: line 1: function "nosuch" not defined`,
		"step each: forEach.items: template: line 1: missing value for range",
		"workflow: output.o: template: line 1: unexpected {{end}}",
	}, st.ValidationErrors)
	for _, e := range st.ValidationErrors {
		assert.False(t, strings.Contains(e, "t:"), e)
	}
}

// The reconciler validates templates against the engine's functions: env,
// expandenv and getHostByName are none of them.
func TestATemplateReadingTheEnvironmentIsInvalid(t *testing.T) {
	h := newHarness()
	h.cat.Set(git, "", []string{"status"})
	k := events.NewKey(v1alpha1.KindWorkflow, "", "env")
	h.declare(t, "workflows/env.yaml", wfDoc("env", `    - id: a
      tool: x_git_status
      args: {t: "{{ env \"MUSTERD_TOKEN\" }}", h: "{{ getHostByName \"example.com\" }}"}
`), k)
	_, st := h.reconcile(t, k)
	require.False(t, st.Valid)
	assert.Equal(t, []string{
		`step a: args.h: template: line 1: function "getHostByName" not defined`,
		`step a: args.t: template: line 1: function "env" not defined`,
	}, st.ValidationErrors)
}
