package workflowrun

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// Reserved arguments of every workflow tool: consumed by the engine, never
// passed to steps, never colliding with a workflow's own (they start with
// an underscore, which muster's reserved _debug does too).
const (
	// argDebug: true returns the full result, every step's result and the
	// rendered output, instead of the output template alone (muster's).
	argDebug = "_debug"
	// argTimeout: the run's overall deadline, a Go duration ("90s") or a
	// number of seconds, at most Options.MaxTimeout. A musterd addition.
	argTimeout = "_timeout"
)

// checkInput validates args against the workflow's declared arguments and
// returns the input the steps see: defaults filled in, reserved arguments
// removed. Arguments the workflow does not declare are passed on, as
// muster does.
func checkInput(wfName string, spec map[string]v1alpha1.ArgDefinition, args map[string]any) (map[string]any, error) {
	input := make(map[string]any, len(args)+len(spec))
	for k, v := range args {
		if k == argDebug || k == argTimeout {
			continue
		}
		input[k] = v
	}
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		def := spec[name]
		v, present := input[name]
		if !present || v == nil {
			switch {
			case def.Default != nil && len(def.Default.Raw) > 0:
				d, err := decodeJSON(def.Default.Raw)
				if err != nil {
					return nil, &Error{Workflow: wfName, Field: "input." + name, Err: fmt.Errorf("default: %w", err)}
				}
				input[name] = d
			case def.Required:
				// muster's words, which its clients look for.
				return nil, &Error{Workflow: wfName, Field: "input." + name, Err: fmt.Errorf("input validation failed: required field '%s' is missing", name)}
			default:
				delete(input, name)
			}
			continue
		}
		if str, ok := v.(string); ok && def.Type != v1alpha1.ArgTypeString && def.Type != "" {
			// muster's CLI sends every argument as text (start workflow
			// W --count=3): text that reads as the declared type is taken
			// as it.
			if parsed, ok := fromText(str, def.Type); ok {
				input[name], v = parsed, parsed
			}
		}
		if !hasType(v, def.Type) {
			return nil, &Error{Workflow: wfName, Field: "input." + name,
				Err: fmt.Errorf("wrong type: expected %s, got %s", def.Type, typeName(v))}
		}
	}
	return input, nil
}

// fromText reads s as a value of type t: a number, a boolean, or JSON.
func fromText(s string, t v1alpha1.ArgType) (any, bool) {
	var v any
	switch t {
	case v1alpha1.ArgTypeBoolean:
		b, err := strconv.ParseBool(s)
		return b, err == nil
	case v1alpha1.ArgTypeNumber, v1alpha1.ArgTypeInteger:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case v1alpha1.ArgTypeArray, v1alpha1.ArgTypeObject:
		if json.Unmarshal([]byte(s), &v) == nil && hasType(v, t) {
			return v, true
		}
	}
	return nil, false
}

// hasType reports whether the decoded JSON value v is of type t. An integer
// is a number without a fractional part.
func hasType(v any, t v1alpha1.ArgType) bool {
	switch t {
	case v1alpha1.ArgTypeString:
		_, ok := v.(string)
		return ok
	case v1alpha1.ArgTypeBoolean:
		_, ok := v.(bool)
		return ok
	case v1alpha1.ArgTypeNumber:
		_, ok := number(v)
		return ok
	case v1alpha1.ArgTypeInteger:
		f, ok := number(v)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	case v1alpha1.ArgTypeArray:
		_, ok := v.([]any)
		return ok
	case v1alpha1.ArgTypeObject:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// typeName names v's JSON type.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if _, ok := number(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// debugFlag reads the reserved _debug argument: true or "true".
func debugFlag(args map[string]any) bool {
	switch v := args[argDebug].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// timeoutArg reads the reserved _timeout argument; 0 when absent.
func timeoutArg(wfName string, args map[string]any) (time.Duration, error) {
	v, ok := args[argTimeout]
	if !ok || v == nil {
		return 0, nil
	}
	var d time.Duration
	switch v := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, &Error{Workflow: wfName, Field: "input." + argTimeout, Err: err}
		}
	default:
		f, ok := number(v)
		if !ok {
			return 0, &Error{Workflow: wfName, Field: "input." + argTimeout,
				Err: fmt.Errorf("wrong type: expected a duration such as \"90s\" or a number of seconds, got %s", typeName(v))}
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, &Error{Workflow: wfName, Field: "input." + argTimeout, Err: fmt.Errorf("must be positive, not %v", v)}
	}
	return d, nil
}

// inputSchema is the JSON schema of workflow wf's tool: its declared
// arguments with their types, descriptions and defaults, the required ones
// listed, plus the reserved _debug and _timeout.
func inputSchema(wf *v1alpha1.Workflow) map[string]any {
	props := map[string]any{}
	var required []string
	for _, name := range slices.Sorted(maps.Keys(wf.Spec.Args)) {
		def := wf.Spec.Args[name]
		p := map[string]any{}
		if def.Type != "" {
			p["type"] = string(def.Type)
		}
		if def.Description != "" {
			p["description"] = def.Description
		}
		if def.Default != nil && len(def.Default.Raw) > 0 {
			if d, err := decodeJSON(def.Default.Raw); err == nil {
				p["default"] = d
			}
		}
		props[name] = p
		if def.Required {
			required = append(required, name)
		}
	}
	props[argDebug] = map[string]any{"type": "boolean", "description": "return every step's result and the rendered output, not the output alone"}
	props[argTimeout] = map[string]any{"type": []any{"string", "number"}, "description": "overall deadline of this run: a duration such as \"90s\", or seconds"}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema
}
