package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend is where the endpoint lists and calls the exposed tools and
// reads the running servers' resources and prompts: package router's
// *Router, the one way in for a tool call (core tools, managed servers'
// tools, workflows). The endpoint reads its lists on every Refresh and
// hands every call to it; it never talks to a managed server, and
// implements no exposed tool, itself.
type Backend interface {
	// Tools returns every exposed tool with its definition, Name set to
	// the exposed name, sorted by name. An unchanged tool is the same
	// *mcp.Tool from one call to the next, and is never changed.
	Tools() []*mcp.Tool
	// ToolsFor returns the exposed set as the caller of ctx sees it
	// (identity.From(ctx)'s owner): Tools' set, plus the tools of the
	// servers that owner connects to on its own, never another owner's.
	// A caller whose owner has none gets Tools' set.
	ToolsFor(ctx context.Context) []*mcp.Tool
	// CallTool calls the exposed tool name with args, or a name the
	// Backend claims though it does not list it (a workflow that cannot
	// run, a tool whose server stopped). An error means the call could not
	// be made (one matching ErrUnknownTool: nothing exposes or claims the
	// name); a tool-level failure is a result with IsError. progress is
	// nil when the client asked for no progress notifications. The call's
	// router.Caller is in ctx.
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
