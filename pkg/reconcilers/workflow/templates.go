package workflow

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/tmplfuncs"
)

// templateErrors parses every template wf holds (step and condition
// arguments, condition templates, expected jsonPath values and paths,
// forEach items, output) and returns one error for each that does not
// parse, naming the step and the field: "step render: args.x: template:
// unclosed action". A workflow with one is invalid at once rather than
// failing each run.
func templateErrors(wf *v1alpha1.Workflow) []string {
	var errs []string
	check := func(where, field, s string) {
		if !tmplfuncs.IsTemplate(s) {
			return
		}
		// Parsed, and their errors shown, as the workflow engine does
		// (package tmplfuncs).
		if _, err := tmplfuncs.Parse(s); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s: %v", where, field, tmplfuncs.CleanError(err)))
		}
	}
	var value func(where, field string, v any)
	value = func(where, field string, v any) {
		switch v := v.(type) {
		case string:
			check(where, field, v)
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				value(where, field+"."+k, v[k])
			}
		case []any:
			for i, e := range v {
				value(where, fmt.Sprintf("%s[%d]", field, i), e)
			}
		}
	}
	jsonMap := func(where, field string, m map[string]v1alpha1.JSON) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			var v any
			if json.Unmarshal(m[k].Raw, &v) == nil {
				value(where, field+"."+k, v)
			}
		}
	}
	cond := func(where string, c *v1alpha1.WorkflowCondition) {
		if c == nil {
			return
		}
		check(where, "condition.template", c.Template)
		jsonMap(where, "condition.args", c.Args)
		for _, e := range []struct {
			name string
			exp  *v1alpha1.WorkflowConditionExpectation
		}{{"expect", c.Expect}, {"expectNot", c.ExpectNot}} {
			name, exp := e.name, e.exp
			if exp == nil {
				continue
			}
			for _, path := range slices.Sorted(maps.Keys(exp.JSONPath)) {
				check(where, "condition."+name+".jsonPath", path)
			}
			jsonMap(where, "condition."+name+".jsonPath", exp.JSONPath)
		}
	}
	sub := func(where string, s v1alpha1.WorkflowSubStep) {
		jsonMap(where, "args", s.Args)
		cond(where, s.Condition)
	}
	for _, s := range wf.Spec.Steps {
		where := "step " + s.ID
		jsonMap(where, "args", s.Args)
		cond(where, s.Condition)
		if s.ForEach != nil {
			check(where, "forEach.items", s.ForEach.Items)
			for _, b := range s.ForEach.Steps {
				sub(where+"."+b.ID, b)
			}
		}
		for _, p := range s.Parallel {
			sub(where+"."+p.ID, p)
		}
	}
	for _, s := range wf.Spec.OnFailure {
		sub("onFailure step "+s.ID, s)
	}
	jsonMap("workflow", "output", wf.Spec.Output)
	return errs
}
