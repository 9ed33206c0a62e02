package coretools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/tooldef"
)

// The tools that change definitions and services, declared as muster
// declares their arguments. Their calls check their own arguments, with
// muster's texts, and hand those they do not declare to the definition
// decoder, which names them (tooldef.Tool.SelfChecked).

// selfChecked adapts a call that checks its own arguments.
func selfChecked(call func(context.Context, map[string]any) *mcp.CallToolResult) func(context.Context, tooldef.Args) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
		return call(ctx, a), nil
	}
}

func arg(name, typ, description string) tooldef.Arg {
	return tooldef.Arg{Name: name, Type: typ, Description: description}
}

func required(a tooldef.Arg) tooldef.Arg {
	a.Required = true
	return a
}

// withSchema is a declared argument whose property schema says more than
// its type (an enum, the items of an array, an object's properties).
func withSchema(name, typ string, schema map[string]any) tooldef.Arg {
	return tooldef.Arg{Name: name, Type: typ, Schema: schema}
}

func stringMap(name, description string) tooldef.Arg {
	return withSchema(name, tooldef.Object, map[string]any{"type": "object", "description": description, "additionalProperties": map[string]any{"type": "string"}})
}

// musterd's additions to muster's arguments.
var (
	waitArg            = arg("wait", tooldef.Boolean, "musterd: answer once the change is reconciled (Synced or Failed), with its state, rather than once it is in force")
	resourceVersionArg = arg("resourceVersion", tooldef.String, "musterd: the version read (the file's content hash, or the resource's resourceVersion); an edit since is a conflict and nothing is written")
	reasonArg          = arg("reason", tooldef.String, "musterd: why, shown in status and events")
)

// mcpServerArgs are the MCP server tools' arguments; type is required to
// validate and create, not to update.
func mcpServerArgs(typeRequired, update bool) []tooldef.Arg {
	typ := withSchema("type", tooldef.String, map[string]any{"type": "string", "enum": []string{"stdio", "streamable-http", "sse"}, "description": "MCP server type (stdio, streamable-http, or sse)"})
	if typeRequired {
		typ = required(typ)
	}
	args := []tooldef.Arg{
		required(arg("name", tooldef.String, "MCP server name")),
		typ,
		arg("toolPrefix", tooldef.String, "Tool prefix for namespacing"),
		withSchema("family", tooldef.Object, map[string]any{"type": "object",
			"description": "Family that this MCP server instance belongs to (groups equivalent servers under a single tool name)",
			"properties": map[string]any{
				"name":        map[string]any{"type": "string", "description": "Family identifier shared across instances"},
				"instanceArg": map[string]any{"type": "string", "description": "Name of the required argument that picks the family member handling a call"},
			}}),
		arg("description", tooldef.String, "MCP server description"),
		arg("autoStart", tooldef.Boolean, "Whether server should auto-start"),
		arg("command", tooldef.String, "Command executable path (required for stdio)"),
		withSchema("args", tooldef.Array, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Command arguments (stdio only)"}),
		arg("url", tooldef.String, "Server endpoint URL (required for streamable-http and sse)"),
		stringMap("env", "Environment variables"),
		stringMap("headers", "HTTP headers (streamable-http and sse only)"),
		arg("timeout", tooldef.Integer, "Connection timeout in seconds"),
		authArg(),
	}
	if typeRequired || update {
		args = append(args, waitArg)
	}
	if update {
		args = append(args, resourceVersionArg)
	}
	return args
}

// workflowArgs are the workflow tools' arguments.
func workflowArgs(nameDescription string, update bool) []tooldef.Arg {
	args := []tooldef.Arg{
		required(arg("name", tooldef.String, nameDescription)),
		arg("description", tooldef.String, "Description of the workflow"),
		withSchema("args", tooldef.Object, map[string]any{"type": "object", "description": "Workflow arguments definition", "additionalProperties": map[string]any{"type": "object"}}),
		required(withSchema("steps", tooldef.Array, map[string]any{"type": "array", "description": "Workflow steps", "items": map[string]any{"type": "object"}})),
		withSchema("onFailure", tooldef.Array, map[string]any{"type": "array", "description": "Cleanup/rollback steps run when the workflow fails", "items": map[string]any{"type": "object"}}),
		withSchema("output", tooldef.Object, map[string]any{"type": "object", "description": "Optional output template that shapes the returned document"}),
		waitArg,
	}
	if update {
		args = append(args, resourceVersionArg)
	}
	return args
}

// named are the arguments of a tool that names its target, and more.
func named(description string, more ...tooldef.Arg) []tooldef.Arg {
	return append([]tooldef.Arg{required(arg("name", tooldef.String, description))}, more...)
}

// definitionTools are the tools that validate and change definitions.
func (p *Provider) definitionTools() []*tooldef.Tool {
	tool := func(name, description string, args []tooldef.Arg, call func(context.Context, map[string]any) *mcp.CallToolResult) *tooldef.Tool {
		return &tooldef.Tool{Name: name, Description: description, Args: args, Call: selfChecked(call), SelfChecked: true}
	}
	return []*tooldef.Tool{
		tool("core_mcpserver_validate", "Validate an mcpserver definition", mcpServerArgs(true, false), p.mcpServerValidate),
		tool("core_mcpserver_create", "Create a new MCP server definition", mcpServerArgs(true, false), p.mcpServerCreate),
		tool("core_mcpserver_update", "Update an existing MCP server definition", mcpServerArgs(false, true), p.mcpServerUpdate),
		tool("core_mcpserver_delete", "Delete an MCP server definition", named("Name of the MCP server to delete", waitArg, resourceVersionArg), p.mcpServerDelete),
		tool("core_workflow_validate", "Validate a workflow definition", workflowArgs("Name of the workflow", false), p.workflowValidate),
		tool("core_workflow_create", "Create a new workflow", workflowArgs("Name of the workflow", false), p.workflowCreate),
		tool("core_workflow_update", "Update an existing workflow", workflowArgs("Name of the workflow to update", true), p.workflowUpdate),
		tool("core_workflow_delete", "Delete a workflow", named("Name of the workflow to delete", waitArg, resourceVersionArg), p.workflowDelete),
	}
}

// serviceTools are the tools that start, stop and restart services.
func (p *Provider) serviceTools() []*tooldef.Tool {
	tool := func(name, description, what string, call func(context.Context, map[string]any) *mcp.CallToolResult) *tooldef.Tool {
		return &tooldef.Tool{Name: name, Description: description, Args: named("Service name to "+what, reasonArg), Call: selfChecked(call), SelfChecked: true}
	}
	return []*tooldef.Tool{
		tool("core_service_start", "Start a specific service", "start", p.serviceStart),
		tool("core_service_stop", "Stop a specific service", "stop", p.serviceStop),
		tool("core_service_restart", "Restart a specific service", "restart", p.serviceRestart),
	}
}
