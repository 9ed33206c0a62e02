package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend is what the managed servers offer, through the router that owns
// their live sessions (package router satisfies it). The endpoint reads
// its lists on every Refresh and routes calls to it; it never talks to a
// managed server itself.
type Backend interface {
	// Tools returns every exposed server tool (x_…) with its definition,
	// Name set to the exposed name, sorted by name.
	Tools() []*mcp.Tool
	// CallTool calls the exposed tool name with args (family instance
	// argument resolved and removed). An error means the call could not be
	// made (unknown tool, server not running, died mid-call); a tool-level
	// failure is a result with IsError. progress is nil when the client
	// asked for no progress notifications.
	CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
	// Resources returns the resources of the running servers, sorted by
	// URI.
	Resources() []*mcp.Resource
	// ReadResource reads the resource uri from the server that offers it.
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	// Prompts returns the prompts of the running servers under their
	// exposed names, sorted by name.
	Prompts() []*mcp.Prompt
	// GetPrompt gets the exposed prompt name from the server that offers
	// it.
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// Provider is a further source of exposed tools, such as workflows
// (workflow_…, core_workflow_execution_…). Its tools are listed and called
// like the servers' tools.
type Provider interface {
	// Tools returns the provider's tools under their exposed names, with
	// their full definitions.
	Tools() []*mcp.Tool
	// CallTool calls one of them, as Backend.CallTool does.
	CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}
