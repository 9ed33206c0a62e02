package tooldef

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Argument types, as JSON Schema names them.
const (
	String  = "string"
	Boolean = "boolean"
	Number  = "number"
	Integer = "integer"
	Object  = "object"
	Array   = "array"
)

// Arg is one declared argument.
type Arg struct {
	Name string
	// Type is the argument's JSON type (String, Boolean, …).
	Type     string
	Required bool
	// Description is shown in the schema.
	Description string
	// Default, when not nil, is shown in the schema as the default.
	Default any
	// Schema, when not nil, is the argument's whole property schema (an
	// enum, the items of an array, an object's properties), used instead
	// of the one Type, Description and Default make. Check still checks
	// Type.
	Schema map[string]any
}

// Tool is a tool musterd implements itself.
type Tool struct {
	Name        string
	Description string
	Args        []Arg
	// Call answers a call whose arguments Check accepted. An error means
	// the call could not be made at all; a failure of the tool is a result
	// with IsError.
	Call func(ctx context.Context, a Args) (*mcp.CallToolResult, error)
	// SelfChecked leaves every argument check to Call, whose answers then
	// are muster's texts: Check only makes sure the arguments are there.
	SelfChecked bool

	once sync.Once
	def  *mcp.Tool
}

// Definition returns the tool's definition, its input schema made from
// Args. It is built once and shared: never change it.
func (t *Tool) Definition() *mcp.Tool {
	t.once.Do(func() {
		props := map[string]any{}
		required := []string{}
		for _, a := range t.Args {
			p := a.Schema
			if p == nil {
				p = map[string]any{"type": a.Type, "description": a.Description}
				if a.Default != nil {
					p["default"] = a.Default
				}
			}
			props[a.Name] = p
			if a.Required {
				required = append(required, a.Name)
			}
		}
		schema := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			schema["required"] = required
		}
		t.def = &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}
	})
	return t.def
}

// Check returns raw as the tool's Args, or an error naming the first
// declared argument that is missing or of the wrong type.
func (t *Tool) Check(raw map[string]any) (Args, error) {
	if raw == nil {
		raw = map[string]any{}
	}
	if t.SelfChecked {
		return Args(raw), nil
	}
	for _, decl := range t.Args {
		v, ok := raw[decl.Name]
		if !ok || v == nil {
			if decl.Required {
				return nil, fmt.Errorf("%s: argument %q is required", t.Name, decl.Name)
			}
			continue
		}
		if got := JSONType(v); got != decl.Type && (decl.Type != Number || got != Integer) {
			return nil, fmt.Errorf("%s: argument %q must be %s, not %s", t.Name, decl.Name, Article(decl.Type), Article(got))
		}
		if s, isString := v.(string); decl.Required && isString && s == "" {
			return nil, fmt.Errorf("%s: argument %q must not be empty", t.Name, decl.Name)
		}
	}
	return Args(raw), nil
}

// Invoke checks raw and calls the tool: arguments Check refuses are the
// tool's error result, not an error of the call.
func (t *Tool) Invoke(ctx context.Context, raw map[string]any) (*mcp.CallToolResult, error) {
	a, err := t.Check(raw)
	if err != nil {
		return Error(err.Error()), nil
	}
	return t.Call(ctx, a)
}
