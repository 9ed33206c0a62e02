package workflowrun

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// toolCache keeps each workflow's tool while its definition stays the
// same, so that listing the tools of 100,000 workflows after a change
// builds only the changed ones. A pass of Tools touches the entries it
// returns; sweepEnd forgets the others (workflows deleted, or no longer
// listed). The engine's mu guards it.
type toolCache struct {
	pass  uint64
	byKey map[events.Key]*cachedTool
}

type cachedTool struct {
	def  *v1alpha1.Workflow // the index's definition the tool was built from
	tool *mcp.Tool
	pass uint64 // the last pass that returned it
}

func (c *toolCache) sweepStart() {
	c.pass++
	if c.byKey == nil {
		c.byKey = map[events.Key]*cachedTool{}
	}
}

// get returns k's tool for def, building it if def is not the definition
// it was built from. The index hands out a new definition on every change
// and the same one otherwise.
func (c *toolCache) get(k events.Key, def *v1alpha1.Workflow) *mcp.Tool {
	ct := c.byKey[k]
	if ct == nil || ct.def != def {
		ct = &cachedTool{def: def, tool: buildTool(def)}
		c.byKey[k] = ct
	}
	ct.pass = c.pass
	return ct.tool
}

func (c *toolCache) sweepEnd() {
	for k, ct := range c.byKey {
		if ct.pass != c.pass {
			delete(c.byKey, k)
		}
	}
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
