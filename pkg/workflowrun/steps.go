package workflowrun

import (
	"maps"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// step is the one shape every tool call of a workflow takes: a top-level
// step, a forEach or parallel sub-step, an onFailure step.
type step struct {
	id           string
	tool         string
	args         map[string]v1alpha1.JSON
	cond         *v1alpha1.WorkflowCondition
	output       bool
	allowFailure bool
	// forEach and parallel make a composite top-level step.
	forEach  *v1alpha1.WorkflowForEach
	parallel []v1alpha1.WorkflowSubStep
}

func fromStep(s v1alpha1.WorkflowStep) step {
	return step{id: s.ID, tool: s.Tool, args: s.Args, cond: s.Condition, output: outputOf(s.Output, s.Store),
		allowFailure: s.AllowFailure, forEach: s.ForEach, parallel: s.Parallel}
}

func fromSubStep(s v1alpha1.WorkflowSubStep) step {
	return step{id: s.ID, tool: s.Tool, args: s.Args, cond: s.Condition, output: outputOf(s.Output, s.Store),
		allowFailure: s.AllowFailure}
}

// outputOf is muster's rule: output when set, else the deprecated store.
func outputOf(output *bool, store bool) bool {
	if output != nil {
		return *output
	}
	return store
}

// scope is what templates see besides the input: the results so far and
// the loop variables. A parallel sub-step or a forEach iteration works on
// a child, merged back when it ends, so that siblings running at once
// never share a map.
type scope struct {
	results map[string]any
	vars    map[string]any
	// records, when set, collects the records of a scope whose steps run
	// beside others', for runner.adopt; tvars its template_vars.
	records *[]*record
	tvars   *[]string
}

func newScope() *scope { return &scope{results: map[string]any{}, vars: map[string]any{}} }

// child is a copy of s for a sequential iteration: its records go where
// s's go.
func (s *scope) child() *scope {
	return &scope{results: maps.Clone(s.results), vars: maps.Clone(s.vars), records: s.records, tvars: s.tvars}
}

// isolated is a copy of s for steps that run beside others: it keeps its
// records apart.
func (s *scope) isolated() *scope {
	c := s.child()
	c.records, c.tvars = &[]*record{}, &[]string{}
	return c
}

// data is the template context: .input, .results (also .context, muster's
// alias) and .vars.
func (s *scope) data(input map[string]any) map[string]any {
	return map[string]any{"input": input, "results": s.results, "context": s.results, "vars": s.vars}
}
