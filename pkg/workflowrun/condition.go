package workflowrun

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/tmplfuncs"
)

// condition evaluates st's condition against sc:
//
//   - a template holds when it renders true (or "true");
//   - a tool condition calls the tool and checks its outcome and result;
//   - fromStep checks an earlier step's outcome and result.
//
// expect must hold and expectNot must not. An expectation's success, when
// unset, is true for expect (a jsonPath check implies a call that
// succeeded) and unchecked for expectNot. A jsonPath that matches nothing
// is an error naming the path, not a silent false.
func (r *runner) condition(ctx context.Context, st step, sc *scope) (*condInfo, error) {
	c := st.cond
	data := sc.data(r.input)
	if c.Template != "" {
		v, err := render(c.Template, data)
		if err != nil {
			return nil, &Error{Workflow: r.name, Step: st.id, Field: "condition.template", Err: err}
		}
		return &condInfo{passed: truthy(v), result: v, tool: "template"}, nil
	}
	info := &condInfo{}
	var (
		success bool
		result  any
	)
	switch {
	case c.FromStep != "":
		prev, ok := sc.results[c.FromStep]
		if !ok {
			return nil, &Error{Workflow: r.name, Step: st.id, Field: "condition.fromStep",
				Err: fmt.Errorf("step %s has no result: it has not run, or was skipped", c.FromStep)}
		}
		success, result = true, prev
		if m, ok := prev.(map[string]any); ok && m["isError"] == true {
			success = false
		}
		info.tool = "from_step:" + c.FromStep
	default:
		args, err := r.args(c.Args, sc, "condition.args")
		if err != nil {
			return nil, stepErr(r.name, st.id, "", err)
		}
		info.tool = c.Tool
		v, err := r.callTool(ctx, c.Tool, args)
		if err != nil {
			if isBadInput(stepErr(r.name, st.id, "", err)) || ctx.Err() != nil {
				return nil, stepErr(r.name, st.id, "condition.", err)
			}
			success, result = false, err.Error()
		} else {
			success, result = true, v
		}
	}
	info.result = result
	passed := true
	if c.Expect != nil {
		ok, err := r.expectation(c.Expect, true, success, result, sc, st.id, "condition.expect")
		if err != nil {
			return nil, err
		}
		passed = ok
	}
	if passed && c.ExpectNot != nil {
		ok, err := r.expectation(c.ExpectNot, false, success, result, sc, st.id, "condition.expectNot")
		if err != nil {
			return nil, err
		}
		passed = !ok
	}
	if c.Expect == nil && c.ExpectNot == nil {
		passed = success
	}
	info.passed = passed
	return info, nil
}

// expectation reports whether exp holds of an outcome. defaultSuccess is
// the success expected when exp names none: true for expect; for
// expectNot (false) success is then not checked.
func (r *runner) expectation(exp *v1alpha1.WorkflowConditionExpectation, defaultSuccess, success bool, result any, sc *scope, stepID, field string) (bool, error) {
	switch {
	case exp.Success != nil:
		if success != *exp.Success {
			return false, nil
		}
	case defaultSuccess && !success:
		return false, nil
	}
	if len(exp.JSONPath) > 0 && !success {
		// A failed call has no result to look into.
		return false, nil
	}
	data := sc.data(r.input)
	for _, path := range slices.Sorted(maps.Keys(exp.JSONPath)) {
		f := field + ".jsonPath." + path
		want, err := decodeJSON(exp.JSONPath[path].Raw)
		if err == nil {
			want, err = renderValue(want, data, f)
		}
		if err != nil {
			return false, stepErr(r.name, stepID, "", err)
		}
		got, found, err := lookupPath(result, path, data)
		if err != nil {
			return false, &Error{Workflow: r.name, Step: stepID, Field: f, Err: err}
		}
		if !found {
			return false, &Error{Workflow: r.name, Step: stepID, Field: f, Err: fmt.Errorf("matches nothing in the result")}
		}
		if !equal(got, want) {
			return false, nil
		}
	}
	return true, nil
}

// truthy is a template condition's verdict: true, or text reading true.
func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.TrimSpace(v) == "true"
	}
	return false
}

// equal compares a value found in a result with an expected one: equal as
// JSON, or, as muster compares, equal when printed (an expected 3 and a
// result's "3").
func equal(got, want any) bool {
	if reflect.DeepEqual(got, want) {
		return true
	}
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 == nil && err2 == nil && string(g) == string(w) {
		return true
	}
	return fmt.Sprint(got) == fmt.Sprint(want)
}

// lookupPath finds path in result. A path is either a template over
// .result (with .input, .results and .vars), or a bare path: dotted names
// and [index]es, optionally after "$." ("items[0].name", "$.a.b"). found
// is false when the path leads nowhere.
func lookupPath(result any, path string, data map[string]any) (v any, found bool, err error) {
	if tmplfuncs.IsTemplate(path) {
		d := make(map[string]any, len(data)+1)
		maps.Copy(d, data)
		d["result"] = result
		v, err := render(path, d)
		if err != nil {
			if strings.Contains(err.Error(), "map has no entry") || strings.Contains(err.Error(), "index out of range") {
				return nil, false, nil
			}
			return nil, false, err
		}
		return v, v != nil, nil
	}
	cur := result
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "$"), ".")
	for rest != "" {
		var seg string
		if rest[0] == '[' {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, false, fmt.Errorf("path %q: unclosed [", path)
			}
			idx, err := strconv.Atoi(rest[1:end])
			if err != nil {
				return nil, false, fmt.Errorf("path %q: index %q is not a number", path, rest[1:end])
			}
			rest = strings.TrimPrefix(rest[end+1:], ".")
			list, ok := cur.([]any)
			if !ok || idx < 0 || idx >= len(list) {
				return nil, false, nil
			}
			cur = list[idx]
			continue
		}
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			seg, rest = rest, ""
		} else {
			seg, rest = rest[:end], strings.TrimPrefix(rest[end:], ".")
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if cur, ok = m[seg]; !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}
