package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// ServerOffer is one running server as it offers itself: what the
// endpoint's view of that server alone (/mcp/servers/<name>) serves, under
// the server's own names.
type ServerOffer struct {
	Key events.Key
	// Init is what the server answered to initialize: its serverInfo,
	// capabilities and instructions. Shared: never change it.
	Init *mcp.InitializeResult
	// Tools are its own tools, as it listed them. Shared.
	Tools []*mcp.Tool
	// Resources, Templates and Prompts are its own, as the router last
	// listed them (in the background: empty until the first listing).
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	Prompts   []*mcp.Prompt
}

// ErrServerNotDeclared is matched (errors.Is) by Server's error for a
// server no definition declares.
var ErrServerNotDeclared = errors.New("no MCPServer of that name is declared")

// ServerDownError is Server's error for a declared server that does not
// run: its state and, if it failed, why.
type ServerDownError struct {
	Key       events.Key
	State     string
	LastError string
}

func (e *ServerDownError) Error() string {
	msg := fmt.Sprintf("mcp server %s is not running (state %s)", e.Key, e.State)
	if e.LastError != "" {
		msg += ": " + supervisor.Summary(e.LastError)
	}
	return msg
}

// observer is what Server needs of the supervisor beyond Servers: what it
// knows of one server. *supervisor.Supervisor is one.
type observer interface {
	Get(key events.Key) (supervisor.Observed, bool)
}

// Server returns the server key as it offers itself while it runs; an
// error matching ErrServerNotDeclared for a server no definition declares
// (Options.Declared), and a *ServerDownError naming the state of one that
// does not run.
func (r *Router) Server(key events.Key) (ServerOffer, error) {
	key = key.Canonical()
	if r.declared != nil && !r.declared(key) {
		return ServerOffer{}, fmt.Errorf("%w: %s", ErrServerNotDeclared, key)
	}
	o, ok := r.servers.(observer)
	if !ok {
		return ServerOffer{}, &ServerDownError{Key: key, State: "Unknown"}
	}
	obs, found := o.Get(key)
	if !found {
		return ServerOffer{}, &ServerDownError{Key: key, State: "Stopped"}
	}
	if !obs.Running() || obs.Init == nil {
		return ServerOffer{}, &ServerDownError{Key: key, State: string(obs.State), LastError: obs.LastError}
	}
	offer := ServerOffer{Key: key, Init: obs.Init, Tools: obs.ToolDefs}
	r.listings.mu.Lock()
	if l := r.listings.servers[key]; l != nil {
		offer.Resources, offer.Templates, offer.Prompts = l.resources, l.templates, l.prompts
	}
	r.listings.mu.Unlock()
	return offer, nil
}

// CallServerTool calls the tool name of server key, by the server's own
// name: the call of the view of that server alone. As CallTool's, the call
// is logged once and counted, waits for a server starting or restarting,
// and fails at once on one that does not run.
func (r *Router) CallServerTool(ctx context.Context, key events.Key, name string, args map[string]any,
	progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	key = key.Canonical()
	if args == nil {
		args = map[string]any{}
	}
	if _, has := CallerOf(ctx); !has {
		ctx = WithCaller(ctx, Caller{})
	}
	start := time.Now()
	res, err := r.servers.CallTool(ctx, key, &mcp.CallToolParams{Name: name, Arguments: args}, progress)
	took := time.Since(start)
	result := outcome(res, err)
	if r.metrics != nil {
		r.metrics.observeCall(key, name, result, took)
	}
	if r.debug(ctx) {
		r.logCall(ctx, callLog{tool: name, source: sourceServer, server: key.String(), serverTool: name, args: args}, result, took, err)
	}
	return res, err
}

// ReadServerResource reads the resource uri of server key, by the
// server's own URI.
func (r *Router) ReadServerResource(ctx context.Context, key events.Key, uri string) (*mcp.ReadResourceResult, error) {
	return r.servers.ReadResource(ctx, key.Canonical(), &mcp.ReadResourceParams{URI: uri})
}

// GetServerPrompt gets the prompt name of server key, by the server's own
// name.
func (r *Router) GetServerPrompt(ctx context.Context, key events.Key, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return r.servers.GetPrompt(ctx, key.Canonical(), &mcp.GetPromptParams{Name: name, Arguments: args})
}
