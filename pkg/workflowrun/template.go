package workflowrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"text/template"
	"text/template/parse"

	"github.com/musterd/musterd/pkg/tmplfuncs"
)

// captureFunc is the name of the function render appends to a single
// expression's pipeline to receive its value. The leading underscores keep
// it out of any name a template could mean.
const captureFunc = "__musterd_capture"

// render evaluates the template s against data. A template that is one
// expression and nothing else ("{{ .input.count }}", "{{ len .results.x }}")
// keeps the type of its value, so that a number stays a number and a list a
// list; any other template renders to a string. Missing map keys are errors
// (missingkey=error), not "<no value>".
func render(s string, data map[string]any) (any, error) {
	if !tmplfuncs.IsTemplate(s) {
		return s, nil
	}
	// The functions and bounds are package tmplfuncs's, the same the
	// reconciler validates templates against.
	tmpl, err := tmplfuncs.Parse(s)
	if err != nil {
		return nil, tmplfuncs.CleanError(err)
	}
	if pipe := singleExpression(tmpl); pipe != nil {
		var (
			value    any
			captured bool
		)
		// The parsed tree gets one more command at the end of its pipeline,
		// the capture function, which receives the expression's value as
		// its last argument and renders nothing.
		pipe.Cmds = append(pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand,
			Args: []parse.Node{parse.NewIdentifier(captureFunc).SetTree(tmpl.Tree).SetPos(pipe.Pos)}})
		tmpl.Funcs(template.FuncMap{captureFunc: func(v any) string { value, captured = v, true; return "" }})
		if err := tmplfuncs.Execute(tmpl, discard{}, data); err != nil {
			return nil, tmplfuncs.CleanError(err)
		}
		if !captured {
			return nil, nil
		}
		return value, nil
	}
	var buf bytes.Buffer
	if err := tmplfuncs.Execute(tmpl, &buf, data); err != nil {
		return nil, tmplfuncs.CleanError(err)
	}
	return buf.String(), nil
}

// singleExpression returns the pipeline of a template that is exactly one
// action without variable declarations, surrounding whitespace allowed; nil
// otherwise.
func singleExpression(tmpl *template.Template) *parse.PipeNode {
	if tmpl.Tree == nil || tmpl.Root == nil {
		return nil
	}
	var action *parse.ActionNode
	for _, n := range tmpl.Root.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if action != nil {
				return nil
			}
			action = n
		case *parse.TextNode:
			if len(bytes.TrimSpace(n.Text)) != 0 {
				return nil
			}
		default:
			return nil
		}
	}
	if action == nil || action.Pipe == nil || len(action.Pipe.Decl) > 0 {
		return nil
	}
	return action.Pipe
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// renderValue renders every string in v (a decoded JSON value: maps,
// slices, strings, numbers, booleans, nil) as a template, recursively. path
// names where v sits, for errors ("args.image", "output.summary[1]").
func renderValue(v any, data map[string]any, path string) (any, error) {
	switch v := v.(type) {
	case string:
		out, err := render(v, data)
		if err != nil {
			return nil, &fieldError{field: path, err: err}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := renderValue(e, data, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := renderValue(e, data, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}

// fieldError is an error at one field of a step: renderValue's, before
// the step's and workflow's names are added.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

// rephrase puts what failed, in muster's words ("failed to render
// arguments"), before the cause of a *fieldError err; other errors are
// returned as they are.
func rephrase(err error, what string) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return err
	}
	return &fieldError{field: fe.field, err: fmt.Errorf("%s: %w", what, fe.err)}
}
func (e *fieldError) Unwrap() error { return e.err }

// decodeJSON decodes raw JSON into plain values; empty is nil.
func decodeJSON(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
