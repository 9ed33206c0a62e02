package coretools

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/declare"
)

// A workflow the core tools refuse is answered in muster's words
// (musterwords.go), translated from the structured result of musterd's own
// validation: each v1alpha1.FieldError's Cause and Path say which of
// muster's problems it is, never its message. muster stops at the first
// problem it finds, in the order it checks; musterd finds them all, so the
// answer is the one muster would have found first. Problems muster does
// not check (a step id's pattern, a description's length, a step id used
// again in another group) keep musterd's own words, and are told only when
// muster would have found nothing.

// musterPass is which of muster's two passes over a request finds a
// problem: it reads the arguments, then validates what it read.
type musterPass int

const (
	passReading    musterPass = iota // muster's convertToWorkflow
	passValidating                   // muster's ValidateWorkflowFromStructured
	passMusterd                      // a problem muster does not check
)

// musterProblem is one problem of a workflow as muster says it, and when
// muster finds it.
type musterProblem struct {
	// text is what muster's validation returns, without the tool's
	// wrapping.
	text string
	pass musterPass
	// order is muster's order of checks within the pass.
	order []int
}

func (m musterProblem) before(o musterProblem) bool {
	if m.pass != o.pass {
		return m.pass < o.pass
	}
	return slices.Compare(m.order, o.order) < 0
}

// answer is the text of tool op's refusal.
func (m musterProblem) answer(op string) string {
	switch op {
	case opValidate:
		return musterValidateFailed + m.text
	case opCreate:
		// muster's create reads the arguments itself before it validates
		// them, and says what it cannot read without its "validation
		// failed: ".
		if m.pass == passReading {
			return musterCreateFailed + m.text
		}
		return musterCreateFailed + musterInvalid + m.text
	}
	return musterUpdateFailed + musterInvalid + m.text
}

// workflowRefused answers a workflow that op (validate, create, update)
// refuses for err: the tool's answer, and why for the event.
func workflowRefused(op string, err error) (answer, why string) {
	m := workflowProblem(err)
	return m.answer(op), m.text
}

// workflowUnnamed is the refusal of a workflow request without a name, or
// nil when it has one (a name that is no string is musterd's to tell).
func workflowUnnamed(m map[string]any) *musterProblem {
	if v := m["name"]; v != nil && v != "" {
		return nil
	}
	return &musterProblem{text: musterNameRequired, pass: passReading}
}

// workflowProblem is the problem muster would find first among those
// declare found, err.
func workflowProblem(err error) musterProblem {
	invalid, ok := errors.AsType[*declare.InvalidError](err)
	if !ok {
		return musterProblem{text: err.Error(), pass: passMusterd}
	}
	if len(invalid.Errs) == 0 {
		return musterProblem{text: invalid.Msg, pass: passMusterd}
	}
	r := reader{spec: invalid.Spec}
	var (
		first *musterProblem
		own   []string
	)
	for _, fe := range invalid.Errs {
		m, ok := r.problem(fe)
		if !ok {
			own = append(own, fe.Error())
			continue
		}
		if first == nil || m.before(*first) {
			first = &m
		}
	}
	if first != nil {
		return *first
	}
	return musterProblem{text: strings.Join(own, "; "), pass: passMusterd}
}

// reader finds muster's problems in FieldErrors of one workflow's spec.
type reader struct {
	// spec is the spec validated, from which muster's texts take step ids.
	spec map[string]any
}

// problem is fe as muster says it; false if muster does not check it.
func (r reader) problem(fe *v1alpha1.FieldError) (musterProblem, bool) {
	path, ok := match(fe.Path, "spec")
	if !ok {
		return musterProblem{}, false
	}
	if rest, ok := match(path, "args", anyEntry); ok && is(rest, "type") && missing(fe) {
		return reading(musterReadingArgs+fmt.Sprintf(musterArgTypeRequired, path[1].Name), 0), true
	}
	if is(path, "steps") {
		switch fe.Cause {
		case v1alpha1.CauseRequired:
			return reading(musterStepsRequired, 1, -1), true
		case v1alpha1.CauseEmpty:
			return validating(musterNoSteps, 0), true
		}
	}
	if rest, ok := match(path, "steps", anyItem); ok {
		return r.step(path[:2], rest, fe)
	}
	if rest, ok := match(path, "onFailure", anyItem); ok {
		j := path[1].Index
		if duplicateInGroup(fe) {
			return validating(fmt.Sprintf(musterDuplicateSubStep, musterOnFailureGroup, r.text(path[:2], "id")), 2), true
		}
		if text, order, ok := r.subStep(path[:2], rest, fe); ok {
			return reading(musterReadingFailure+text, append([]int{2, j}, order...)...), true
		}
	}
	return musterProblem{}, false
}

// step is fe, a problem of the step at path (steps[i] of the spec) or of
// rest within it, as muster says it.
func (r reader) step(path, rest v1alpha1.FieldPath, fe *v1alpha1.FieldError) (musterProblem, bool) {
	i, id := path[1].Index, r.text(path, "id")
	at := func(text string, order ...int) musterProblem {
		return reading(musterReadingSteps+text, append([]int{1, i}, order...)...)
	}
	switch {
	case len(rest) == 0 && fe.Cause == v1alpha1.CauseOneOf:
		switch {
		case len(fe.Fields) == 0:
			return at(fmt.Sprintf(musterStepNoKind, i, id), 3), true
		case slices.Contains(fe.Fields, "tool"):
			return at(fmt.Sprintf(musterStepToolAndMore, i, id), 4), true
		default:
			return at(fmt.Sprintf(musterStepBothGroups, i, id), 5), true
		}
	case is(rest, "id"):
		switch fe.Cause {
		case v1alpha1.CauseEmpty:
			return at(fmt.Sprintf(musterStepIDEmpty, i), 0), true
		case v1alpha1.CauseRequired:
			return at(fmt.Sprintf(musterStepIDRequired, i), 0), true
		case v1alpha1.CauseDuplicate:
			if duplicateInGroup(fe) {
				return validating(fmt.Sprintf(musterDuplicateStepID, id), 1, i, 0), true
			}
		}
	case is(rest, "tool") && fe.Cause == v1alpha1.CauseEmpty:
		return at(fmt.Sprintf(musterStepToolEmpty, i, id), 3), true
	case is(rest, "forEach", "items") && missing(fe):
		return at(fmt.Sprintf(musterStepForEach, i, id)+musterForEachItems, 1, 0), true
	case is(rest, "forEach", "steps") && missing(fe):
		return at(fmt.Sprintf(musterStepForEach, i, id)+musterForEachSteps, 1, 1), true
	case is(rest, "condition"):
		if text, k, ok := condition(fe); ok {
			return at(fmt.Sprintf(musterStepCondition, i)+text, 6, k), true
		}
	}
	for g, group := range []struct {
		path   []any
		label  string
		prefix string
	}{{[]any{"forEach", "steps", anyItem}, musterForEachGroup, musterStepForEach}, {[]any{"parallel", anyItem}, musterParallelGroup, musterStepParallel}} {
		sub, ok := match(rest, group.path...)
		if !ok {
			continue
		}
		full := fe.Path[1:] // from spec, as path
		subPath := full[:len(full)-len(sub)]
		if duplicateInGroup(fe) {
			return validating(fmt.Sprintf(musterDuplicateSubStep, fmt.Sprintf(group.label, id), r.text(subPath, "id")), 1, i, 1+g), true
		}
		if text, order, ok := r.subStep(subPath, sub, fe); ok {
			return at(fmt.Sprintf(group.prefix, i, id)+text, append([]int{1 + g, 2, subPath[len(subPath)-1].Index}, order...)...), true
		}
	}
	return musterProblem{}, false
}

// subStep is fe, a problem of rest within the sub-step at path (from the
// spec: of a forEach, a parallel group or onFailure), as muster says it,
// and muster's order of it within the sub-step.
func (r reader) subStep(path, rest v1alpha1.FieldPath, fe *v1alpha1.FieldError) (string, []int, bool) {
	j, id := path[len(path)-1].Index, r.text(path, "id")
	switch {
	case is(rest, "id") && missing(fe):
		return fmt.Sprintf(musterSubStepIDRequired, j), []int{0}, true
	case is(rest, "tool") && missing(fe):
		return fmt.Sprintf(musterSubStepToolRequired, j, id), []int{1}, true
	case is(rest, "condition"):
		if text, k, ok := condition(fe); ok {
			return fmt.Sprintf(musterSubStepCondition, j, id) + text, []int{2, k}, true
		}
	}
	return "", nil, false
}

// condition is fe, a problem of a condition, as muster says it, and its
// order among the condition's checks.
func condition(fe *v1alpha1.FieldError) (string, int, bool) {
	switch fe.Cause {
	case v1alpha1.CauseOneOf:
		switch {
		case len(fe.Fields) == 0:
			return musterConditionNone, 0, true
		case slices.Contains(fe.Fields, "template"):
			return musterConditionTemplateAndMore, 0, true
		default:
			return musterConditionToolAndFromStep, 0, true
		}
	case v1alpha1.CauseRequired:
		return musterConditionNoExpectation, 1, true
	}
	return "", 0, false
}

func reading(text string, order ...int) musterProblem {
	return musterProblem{text: text, pass: passReading, order: order}
}

func validating(text string, order ...int) musterProblem {
	return musterProblem{text: text, pass: passValidating, order: order}
}

// missing reports whether fe says a value is not there: not set, or empty.
func missing(fe *v1alpha1.FieldError) bool {
	return fe.Cause == v1alpha1.CauseRequired || fe.Cause == v1alpha1.CauseEmpty
}

// duplicateInGroup reports whether fe is a step id used twice in one list
// (the workflow's steps, one forEach's or parallel group's, onFailure):
// the duplicates muster checks. musterd also refuses an id used again in
// another list.
func duplicateInGroup(fe *v1alpha1.FieldError) bool {
	p, q := fe.Path, fe.First
	if fe.Cause != v1alpha1.CauseDuplicate || len(p) != len(q) || len(p) < 2 || p[len(p)-2].Kind != v1alpha1.PathItem {
		return false
	}
	return slices.Equal(p[:len(p)-2], q[:len(q)-2]) && p[len(p)-1] == q[len(q)-1]
}

// text is the string at path (from the spec), then fields, in the spec
// validated; "" if there is none.
func (r reader) text(path v1alpha1.FieldPath, fields ...string) string {
	var v any = r.spec
	for _, e := range path {
		switch e.Kind {
		case v1alpha1.PathItem:
			list, _ := v.([]any)
			if e.Index < 0 || e.Index >= len(list) {
				return ""
			}
			v = list[e.Index]
		default:
			m, _ := v.(map[string]any)
			v = m[e.Name]
		}
	}
	for _, f := range fields {
		m, _ := v.(map[string]any)
		v = m[f]
	}
	s, _ := v.(string)
	return s
}

// Wildcards of match's patterns.
type wildcard int

const (
	anyItem  wildcard = iota // any item of a list
	anyEntry                 // any entry of a map
)

// match reports whether path starts with pattern, and returns the rest. A
// string in pattern is a field of that name.
func match(path v1alpha1.FieldPath, pattern ...any) (v1alpha1.FieldPath, bool) {
	if len(path) < len(pattern) {
		return nil, false
	}
	for i, want := range pattern {
		e := path[i]
		switch want {
		case anyItem:
			if e.Kind != v1alpha1.PathItem {
				return nil, false
			}
		case anyEntry:
			if e.Kind != v1alpha1.PathEntry {
				return nil, false
			}
		default:
			if e.Kind != v1alpha1.PathField || e.Name != want {
				return nil, false
			}
		}
	}
	return path[len(pattern):], true
}

// is reports whether path is exactly the fields named.
func is(path v1alpha1.FieldPath, fields ...string) bool {
	if len(path) != len(fields) {
		return false
	}
	for i, f := range fields {
		if path[i].Kind != v1alpha1.PathField || path[i].Name != f {
			return false
		}
	}
	return true
}
