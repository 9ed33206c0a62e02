package catalogue

import (
	"encoding/json"
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
	tools   map[string]*mcp.Tool // exposed name → the server's own definition
	grouped map[string]bool      // exposed names that are the family's
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
// Of two tools of one server with one exposed name, the first counts.
// c.mu is held.
func (c *Catalogue) expose(servers []events.Key) map[events.Key]exposure {
	out := make(map[events.Key]exposure, len(servers))
	fallback := false
	if len(servers) > 1 {
		arg := c.servers[servers[0]].naming.InstanceArg
		for _, k := range servers[1:] {
			if c.servers[k].naming.InstanceArg != arg {
				fallback = true
				break
			}
		}
	}
	// splits are the tool names, by the server's own name, that cannot be
	// grouped.
	splits := map[string]bool{}
	if !fallback && len(servers) > 0 && c.servers[servers[0]].naming.Family != "" {
		arg := c.servers[servers[0]].naming.InstanceArg
		description := map[string]string{}
		for _, k := range servers {
			for _, t := range c.servers[k].own {
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
		s := c.servers[k]
		e := exposure{tools: make(map[string]*mcp.Tool, len(s.own)), grouped: map[string]bool{}}
		for _, t := range s.own {
			grouped := s.naming.Family != "" && !fallback && !splits[t.Name]
			var name string
			if grouped {
				name = c.ExposedName(k, s.naming, t.Name)
			} else {
				name = c.ExposedName(k, Naming{ToolPrefix: s.naming.ToolPrefix}, t.Name)
			}
			if _, dup := e.tools[name]; dup {
				continue
			}
			e.tools[name] = t
			if grouped {
				e.grouped[name] = true
			}
		}
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
