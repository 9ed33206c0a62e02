package workflowrun

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// toolSet is the workflow tools as of the last refresh: the tool of each
// workflow name whose winning definition (Engine.find's) is valid, kept
// while that definition stays the same, and the sorted list Tools returns.
// A refresh of some names re-reads only those, so that a reconcile of one
// workflow among 100,000 costs one lookup, not a pass over all of them: a
// paced resync reconciles a workflow every 10 ms, and a pass each time kept
// a daemon with 100,000 workflows busy for good. The engine's mu guards it.
type toolSet struct {
	byName map[string]cachedTool // by workflow name
	list   []*mcp.Tool           // sorted by name; nil once stale
	listed bool                  // a refresh has run: the first reports a change
}

type cachedTool struct {
	def  *v1alpha1.Workflow // the index's definition the tool was built from
	tool *mcp.Tool
}

// set makes def name's tool, or removes name's tool if def is nil, and
// reports whether the tools changed. The index hands out a new definition
// on every change and the same one otherwise, so a tool is rebuilt only
// when its definition changed.
func (s *toolSet) set(name string, def *v1alpha1.Workflow) (changed bool) {
	cur, had := s.byName[name]
	switch {
	case def == nil && !had:
		return false
	case def == nil:
		delete(s.byName, name)
	case had && cur.def == def:
		return false
	default:
		if s.byName == nil {
			s.byName = map[string]cachedTool{}
		}
		s.byName[name] = cachedTool{def: def, tool: buildTool(def)}
	}
	s.list = nil
	return true
}

// sorted returns the tools by name. The slice is shared and
// capped at its length, so a caller's append copies it.
func (s *toolSet) sorted() []*mcp.Tool {
	if s.list == nil {
		list := make([]*mcp.Tool, 0, len(s.byName))
		for _, ct := range s.byName {
			list = append(list, ct.tool)
		}
		slices.SortFunc(list, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
		s.list = list
	}
	return s.list[:len(s.list):len(s.list)]
}

// buildTool is def's workflow_<name>. Its input schema is kept encoded: a
// nested map costs several times the memory, and every consumer (the
// go-sdk, the meta-tools) encodes it anyway.
func buildTool(def *v1alpha1.Workflow) *mcp.Tool {
	desc := def.Spec.Description
	if desc == "" {
		desc = "Runs workflow " + def.Name
	}
	tool := &mcp.Tool{Name: ToolPrefix + def.Name, Description: desc}
	if len(def.Labels) > 0 {
		// The discovery labels filter_tools facets on, as muster's.
		tool.Meta = mcp.Meta{v1alpha1.MetaKeyLabels: maps.Clone(def.Labels)}
	}
	schema := inputSchema(def)
	// Arguments' defaults are decoded JSON, so this does not fail; if it
	// did, the map would still list, and the endpoint says what is wrong.
	if raw, err := json.Marshal(schema); err == nil {
		tool.InputSchema = json.RawMessage(raw)
	} else {
		tool.InputSchema = schema
	}
	return tool
}
