package catalogue

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
)

// exposure is the exposed names of one running server's tools: each name
// with the server's own definition, and whether it is a family tool
// (grouped) or the server's alone.
type exposure struct {
	tools   map[string]*mcp.Tool // exposed name → the server's own definition, as its policy describes it
	grouped map[string]bool      // exposed names that are the family's
	// visible are the server's own tools its policy keeps, its own
	// definitions, in its order: the view of the server alone.
	visible []*mcp.Tool
	// hidden are names by muster's rule the policy does not offer
	// (left out, or renamed), each with what the policy does to it.
	hidden map[string]string
	// clashes say which tools the policy gave one name.
	clashes []string
}

func (e *exposure) hide(name, why string) {
	if e.hidden == nil {
		e.hidden = map[string]string{}
	}
	e.hidden[name] = why
}

// expose computes the exposed names of every running server in servers
// (a server alone, or every running member of a family), by muster's
// rules for families:
//
//   - A server without a family names its tools
//     {prefix}_{toolPrefix or server name}_{tool}.
//   - A family whose running members declare different instance
//     arguments cannot be called as one: every member's tools fall back to
//     the server's own names, whether or not they overlap.
//   - Otherwise each tool name is one family tool
//     {prefix}_{family}_{tool}, shared by the members that offer it,
//     unless those members describe it differently or one of them already
//     takes an argument named as the instance argument: then that tool
//     alone falls back to each member's own name.
//
// Of two tools of one server with one exposed name, the first counts. of
// finds the servers' offers (the catalogue's, or an owner's view's). c.mu
// is held.
func (c *Catalogue) expose(of offers, servers []events.Key) map[events.Key]exposure {
	out := make(map[events.Key]exposure, len(servers))
	fallback := false
	if len(servers) > 1 {
		arg := of(servers[0]).naming.InstanceArg
		for _, k := range servers[1:] {
			if of(k).naming.InstanceArg != arg {
				fallback = true
				break
			}
		}
	}
	// splits are the tool names, by the server's own name, that cannot be
	// grouped.
	splits := map[string]bool{}
	if !fallback && len(servers) > 0 && of(servers[0]).naming.Family != "" {
		arg := of(servers[0]).naming.InstanceArg
		description := map[string]string{}
		for _, k := range servers {
			for _, t := range of(k).own {
				if d, seen := description[t.Name]; seen && d != t.Description {
					splits[t.Name] = true
				}
				description[t.Name] = t.Description
				if hasProperty(t.InputSchema, arg) {
					splits[t.Name] = true
				}
			}
		}
	}
	for _, k := range servers {
		s := of(k)
		p := c.policies[k]
		e := exposure{tools: make(map[string]*mcp.Tool, len(s.own)), grouped: map[string]bool{}}
		var clashes map[string][]string // exposed name → the tools a policy gave it, for two or more
		for _, t := range s.own {
			// The server's own name, under muster's rule: what a
			// workflow names when the policy hides or renames it.
			plain := c.ExposedName(k, Naming{ToolPrefix: s.naming.ToolPrefix}, t.Name)
			if !p.KeepsTool(t.Name) {
				e.hide(plain, "leaves it out: "+p.Tools.why("tools", t.Name))
				continue
			}
			e.visible = append(e.visible, t)
			grouped := s.naming.Family != "" && !fallback && !splits[t.Name]
			var name string
			switch {
			case grouped:
				name = c.ExposedName(k, s.naming, t.Name)
			case s.naming.Family != "":
				// A family's members share muster's names: its policy
				// filters them, and names nothing.
				name = plain
			default:
				name = c.toolName(k, s.naming, p, t.Name)
				if name != plain {
					e.hide(plain, "exposes it as "+name)
				}
			}
			if _, dup := e.tools[name]; dup {
				if p != nil && s.naming.Family == "" {
					if clashes == nil {
						clashes = map[string][]string{}
					}
					if len(clashes[name]) == 0 {
						clashes[name] = []string{e.tools[name].Name}
					}
					clashes[name] = append(clashes[name], t.Name)
				}
				continue
			}
			e.tools[name] = p.apply(t)
			if grouped {
				e.grouped[name] = true
			}
		}
		for name, own := range clashes {
			// A policy that names two tools alike offers neither.
			delete(e.tools, name)
			e.clashes = append(e.clashes, fmt.Sprintf("tools %s are all exposed as %s: none of them is offered; rename them apart",
				strings.Join(own, ", "), name))
		}
		slices.Sort(e.clashes)
		out[k] = e
	}
	return out
}

// familyMembers returns the running members of family, sorted by key.
// c.mu is held.
func (c *Catalogue) familyMembers(family string) []events.Key {
	var members []events.Key
	for k, s := range c.servers {
		if s.naming.Family == family {
			members = append(members, k)
		}
	}
	slices.SortFunc(members, events.CompareKeys)
	return members
}

// hasProperty reports whether schema, an input schema, declares the
// property name.
func hasProperty(schema any, name string) bool {
	if schema == nil || name == "" {
		return false
	}
	if m, ok := schema.(map[string]any); ok {
		props, _ := m["properties"].(map[string]any)
		_, has := props[name]
		return has
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var typed struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(data, &typed) != nil {
		return false
	}
	_, has := typed.Properties[name]
	return has
}

// annotateInstances appends to a family tool's description the members
// that offer it, as muster does, so that a client reading the list sees
// what the instance argument takes.
func annotateInstances(description string, instances []string) string {
	return description + " (available on servers: " + strings.Join(instances, ", ") + ")"
}

// withInstanceArg returns a copy of schema, an input schema, with the
// required string argument arg that picks one of instances.
func withInstanceArg(schema any, arg string, instances []string) any {
	m := map[string]any{}
	if schema != nil {
		if data, err := json.Marshal(schema); err == nil {
			_ = json.Unmarshal(data, &m) // an object or nothing: an input schema is an object
		}
	}
	if m == nil {
		m = map[string]any{}
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	props, _ := m["properties"].(map[string]any)
	props = maps.Clone(props)
	if props == nil {
		props = map[string]any{}
	}
	props[arg] = map[string]any{
		"type":        "string",
		"description": "Target instance to execute this tool on. Available: " + strings.Join(instances, ", "),
		"enum":        slices.Clone(instances),
	}
	m["properties"] = props
	var required []any
	if r, ok := m["required"].([]any); ok {
		for _, v := range r {
			if v != arg {
				required = append(required, v)
			}
		}
	}
	m["required"] = append(required, arg)
	return m
}
