package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Argument types of the meta-tools and core tools, as JSON Schema names
// them.
const (
	typeString  = "string"
	typeBoolean = "boolean"
	typeNumber  = "number"
	typeObject  = "object"
)

// arg is one argument of a tool musterd implements itself (a meta-tool or
// a core tool): muster's argument metadata.
type arg struct {
	name        string
	typ         string
	required    bool
	description string
	def         any // the default, shown in the schema; nil for none
}

// builtin is a tool musterd implements itself.
type builtin struct {
	name        string
	description string
	args        []arg
	call        func(ctx context.Context, a args) (*mcp.CallToolResult, error)
	// isMeta marks a meta-tool: served on /mcp natively, never exposed.
	isMeta bool
}

// tool returns b's definition, with the input schema its arguments make.
func (b *builtin) tool() *mcp.Tool {
	props := map[string]any{}
	required := []string{}
	for _, a := range b.args {
		p := map[string]any{"type": a.typ, "description": a.description}
		if a.def != nil {
			p["default"] = a.def
		}
		props[a.name] = p
		if a.required {
			required = append(required, a.name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return &mcp.Tool{Name: b.name, Description: b.description, InputSchema: schema}
}

// args are a call's arguments, checked against the tool's declaration.
type args map[string]any

// check returns a's arguments as b declares them, or an error naming the
// first argument missing or of the wrong type. Arguments b does not declare
// are ignored, as muster does.
func (b *builtin) check(a map[string]any) (args, error) {
	for _, decl := range b.args {
		v, ok := a[decl.name]
		if !ok || v == nil {
			if decl.required {
				return nil, fmt.Errorf("%s: argument %q is required", b.name, decl.name)
			}
			continue
		}
		if got := jsonType(v); got != decl.typ && (decl.typ != typeNumber || got != "integer") {
			return nil, fmt.Errorf("%s: argument %q must be %s, not %s", b.name, decl.name, describeType(decl.typ), describeType(got))
		}
		if decl.required && decl.typ == typeString && v.(string) == "" {
			return nil, fmt.Errorf("%s: argument %q must not be empty", b.name, decl.name)
		}
	}
	return args(a), nil
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch n := v.(type) {
	case string:
		return typeString
	case bool:
		return typeBoolean
	case float64:
		if n == math.Trunc(n) {
			return "integer"
		}
		return typeNumber
	case json.Number:
		if _, err := n.Int64(); err == nil {
			return "integer"
		}
		return typeNumber
	case int, int64:
		return "integer"
	case map[string]any:
		return typeObject
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func describeType(t string) string {
	if slices.Contains([]string{"integer", "array", "object"}, t) {
		return "an " + t
	}
	return "a " + t
}

func (a args) str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a args) boolean(name string, def bool) bool {
	if b, ok := a[name].(bool); ok {
		return b
	}
	return def
}

// integer returns the argument name, which check made sure is a number, or
// def when it is absent.
func (a args) integer(name string, def int) int {
	switch n := a[name].(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	return def
}

func (a args) object(name string) map[string]any {
	m, _ := a[name].(map[string]any)
	return m
}
