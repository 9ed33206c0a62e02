package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/catalogue"
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

// userObserver is what ServerOf needs of the supervisor: a user's own
// connection to a server. *supervisor.Supervisor is one.
type userObserver interface {
	UserConnection(key events.Key, owner string) (supervisor.UserObserved, bool)
}

// ServerOf returns the server key as it offers itself to owner
// (identity.Identity.Owner) on owner's own connection to it (a login to a
// protected server, single sign-on): what the server answered that
// connection's initialize, and its tools as owner's view of the
// catalogue has them. ok is false when owner has no such connection; the
// server's own offer, if any, is Server's. Resources and prompts are not
// listed on a user's connection: the offer has none.
func (r *Router) ServerOf(key events.Key, owner string) (offer ServerOffer, ok bool) {
	key = key.Canonical()
	u, isObserver := r.servers.(userObserver)
	if owner == "" || !isObserver {
		return ServerOffer{}, false
	}
	uc, connected := u.UserConnection(key, owner)
	if !connected || uc.Init == nil {
		return ServerOffer{}, false
	}
	tools, inView := r.cat.For(owner).ServerTools(key)
	if !inView {
		return ServerOffer{}, false
	}
	return ServerOffer{Key: key, Init: uc.Init, Tools: tools}, true
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
	if own, inCatalogue := r.cat.ServerTools(key); inCatalogue {
		// Its exposure policy's filter applies; its names never change.
		offer.Tools = own
	} else if p := r.cat.Exposure(key); p != nil {
		offer.Tools = keep(offer.Tools, func(t *mcp.Tool) bool { return p.KeepsTool(t.Name) })
	}
	r.listings.mu.Lock()
	if l := r.listings.servers[key]; l != nil {
		offer.Resources, offer.Templates, offer.Prompts = l.resources, l.templates, l.prompts
	}
	r.listings.mu.Unlock()
	if p := r.cat.Exposure(key); p.Filters() {
		offer.Resources = keep(offer.Resources, func(x *mcp.Resource) bool { return p.KeepsResource(x.URI) })
		offer.Templates = keep(offer.Templates, func(x *mcp.ResourceTemplate) bool { return p.KeepsResource(x.URITemplate) })
		offer.Prompts = keep(offer.Prompts, func(x *mcp.Prompt) bool { return p.KeepsPrompt(x.Name) })
	}
	return offer, nil
}

// keep returns the items of list that ok keeps: list itself when it keeps
// them all, so that an unfiltered list stays the same slice.
func keep[T any](list []*T, ok func(*T) bool) []*T {
	for i, x := range list {
		if x != nil && !ok(x) {
			out := slices.Clone(list[:i])
			for _, y := range list[i+1:] {
				if y != nil && ok(y) {
					out = append(out, y)
				}
			}
			return out
		}
	}
	return list
}

// hidden is the error of a call, read or get, on a server's own view, of
// what its exposure policy leaves out: as for a name it does not have.
func (r *Router) hidden(key events.Key, keeps func(*catalogue.Exposure) bool, what, name string) error {
	if p := r.cat.Exposure(key); !keeps(p) {
		return fmt.Errorf("%s %q of %s is not exposed (its exposure policy, metadata.annotations[%s], leaves it out): %w",
			what, name, key, catalogue.ExposureAnnotation, ErrUnknownTool)
	}
	return nil
}

// CallServerTool calls the tool name of server key, by the server's own
// name: the call of the view of that server alone. As CallTool's, the call
// is logged once and counted, waits for a server starting or restarting,
// and fails at once on one that does not run.
func (r *Router) CallServerTool(ctx context.Context, key events.Key, name string, args map[string]any,
	progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	key = key.Canonical()
	if err := r.hidden(key, func(p *catalogue.Exposure) bool { return p.KeepsTool(name) }, "tool", name); err != nil {
		return nil, err
	}
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
	r.calls.record(key, result != resultOK)
	if r.debug(ctx) {
		r.logCall(ctx, callLog{tool: name, source: sourceServer, server: key.String(), serverTool: name, args: args}, result, took, err)
	}
	return res, err
}

// ReadServerResource reads the resource uri of server key, by the
// server's own URI.
func (r *Router) ReadServerResource(ctx context.Context, key events.Key, uri string) (*mcp.ReadResourceResult, error) {
	if err := r.hidden(key.Canonical(), func(p *catalogue.Exposure) bool { return p.KeepsResource(uri) }, "resource", uri); err != nil {
		return nil, err
	}
	return r.servers.ReadResource(ctx, key.Canonical(), &mcp.ReadResourceParams{URI: uri})
}

// GetServerPrompt gets the prompt name of server key, by the server's own
// name.
func (r *Router) GetServerPrompt(ctx context.Context, key events.Key, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	if err := r.hidden(key.Canonical(), func(p *catalogue.Exposure) bool { return p.KeepsPrompt(name) }, "prompt", name); err != nil {
		return nil, err
	}
	return r.servers.GetPrompt(ctx, key.Canonical(), &mcp.GetPromptParams{Name: name, Arguments: args})
}
