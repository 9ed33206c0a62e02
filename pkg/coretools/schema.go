package coretools

// Input schemas of the tools, as muster declares their arguments.

func obj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func prop(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}

func stringMap(description string) map[string]any {
	return map[string]any{"type": "object", "description": description, "additionalProperties": map[string]any{"type": "string"}}
}

// musterd's additions to muster's arguments.
var (
	waitArg            = prop("boolean", "musterd: answer once the change is reconciled (Synced or Failed), with its state, rather than once it is in force")
	resourceVersionArg = prop("string", "musterd: the version read (the file's content hash, or the resource's resourceVersion); an edit since is a conflict and nothing is written")
)

// mcpServerSchema is the input schema of the MCP server tools; type is
// required to validate and create, not to update.
func mcpServerSchema(typeRequired, update bool) map[string]any {
	props := map[string]any{
		"name":       prop("string", "MCP server name"),
		"type":       map[string]any{"type": "string", "enum": []string{"stdio", "streamable-http", "sse"}, "description": "MCP server type (stdio, streamable-http, or sse)"},
		"toolPrefix": prop("string", "Tool prefix for namespacing"),
		"family": obj(map[string]any{
			"name":        prop("string", "Family identifier shared across instances"),
			"instanceArg": prop("string", "Name of the required argument that picks the family member handling a call"),
		}),
		"description": prop("string", "MCP server description"),
		"autoStart":   prop("boolean", "Whether server should auto-start"),
		"command":     prop("string", "Command executable path (required for stdio)"),
		"args":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Command arguments (stdio only)"},
		"url":         prop("string", "Server endpoint URL (required for streamable-http and sse)"),
		"env":         stringMap("Environment variables"),
		"headers":     stringMap("HTTP headers (streamable-http and sse only)"),
		"timeout":     prop("integer", "Connection timeout in seconds"),
		"auth":        map[string]any{"type": "object", "description": "Authentication configuration for remote servers"},
	}
	required := []string{"name"}
	if typeRequired {
		required = append(required, "type")
	}
	props["family"].(map[string]any)["description"] = "Family that this MCP server instance belongs to (groups equivalent servers under a single tool name)"
	if typeRequired || update {
		props["wait"] = waitArg
	}
	if update {
		props["resourceVersion"] = resourceVersionArg
	}
	return obj(props, required...)
}

// workflowSchema is the input schema of the workflow tools.
func workflowSchema(nameDescription string, update bool) map[string]any {
	props := map[string]any{
		"name":        prop("string", nameDescription),
		"description": prop("string", "Description of the workflow"),
		"args":        map[string]any{"type": "object", "description": "Workflow arguments definition", "additionalProperties": map[string]any{"type": "object"}},
		"steps":       map[string]any{"type": "array", "description": "Workflow steps", "items": map[string]any{"type": "object"}},
		"onFailure":   map[string]any{"type": "array", "description": "Cleanup/rollback steps run when the workflow fails", "items": map[string]any{"type": "object"}},
		"output":      map[string]any{"type": "object", "description": "Optional output template that shapes the returned document"},
		"wait":        waitArg,
	}
	if update {
		props["resourceVersion"] = resourceVersionArg
	}
	return obj(props, "name", "steps")
}

func nameSchema(description string, extra map[string]any) map[string]any {
	props := map[string]any{"name": prop("string", description)}
	for k, v := range extra {
		props[k] = v
	}
	return obj(props, "name")
}
