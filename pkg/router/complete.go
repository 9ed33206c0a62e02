package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
)

// Errors of Complete for a reference no running server offers, and for a
// server that offers no completions.
var (
	ErrUnknownTemplate = errors.New("no running server offers this resource template")
	ErrNoCompletions   = errors.New("offers no completions")
	// ErrBadReference is matched by Complete's error for a reference that
	// is neither a prompt's nor a resource template's.
	ErrBadReference = errors.New("completion reference must be of type ref/prompt or ref/resource")
)

// completer is what Complete and CompleteServer need of the supervisor
// beyond Servers. *supervisor.Supervisor is one.
type completer interface {
	Complete(ctx context.Context, key events.Key, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// Complete asks the server that offers the prompt or resource template
// params.Ref names, under its exposed name or URI template (the names
// Prompts and ResourceTemplates answer), to complete one of its
// arguments: the reference is rewritten to the server's own name or
// template, the argument and context.arguments pass unchanged, and the
// result is the server's. A name or template no running server offers,
// even when listed again, fails with ErrUnknownPrompt or
// ErrUnknownTemplate; a server that does not advertise the completions
// capability with ErrNoCompletions, naming it; a server that does not run
// with the supervisor's error, as a call's does.
func (r *Router) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, fmt.Errorf("%w: no reference", ErrBadReference)
	}
	var lookup func(view) (route, bool)
	var unknown error
	switch params.Ref.Type {
	case "ref/prompt":
		lookup = func(v view) (route, bool) { to, ok := v.names[params.Ref.Name]; return to, ok }
		unknown = fmt.Errorf("prompt %q: %w", params.Ref.Name, ErrUnknownPrompt)
	case "ref/resource":
		lookup = func(v view) (route, bool) { to, ok := v.templateNames[params.Ref.URI]; return to, ok }
		unknown = fmt.Errorf("resource template %q: %w", params.Ref.URI, ErrUnknownTemplate)
	default:
		return nil, fmt.Errorf("%w, not %q", ErrBadReference, params.Ref.Type)
	}
	c, ok := r.servers.(completer)
	if !ok {
		return nil, errors.New("completion is not available: the servers cannot complete")
	}
	to, ok := lookup(r.listings.snapshot())
	if !ok {
		if err := r.relistAll(ctx); err != nil {
			return nil, err
		}
		if to, ok = lookup(r.listings.snapshot()); !ok {
			return nil, unknown
		}
	}
	if r.offersNoCompletions(to.server) {
		return nil, fmt.Errorf("mcp server %s %w", to.server, ErrNoCompletions)
	}
	ref := *params.Ref
	if ref.Type == "ref/prompt" {
		ref.Name = to.own
	} else {
		ref.URI = to.own
	}
	own := *params
	own.Ref = &ref
	return c.Complete(ctx, to.server, &own)
}

// offersNoCompletions reports whether key's server runs and did not
// advertise completions when it answered initialize. One that does not
// run is left to the supervisor, whose error says its state.
func (r *Router) offersNoCompletions(key events.Key) bool {
	o, ok := r.servers.(observer)
	if !ok {
		return false
	}
	obs, found := o.Get(key)
	if !found || !obs.Running() || obs.Init == nil {
		return false
	}
	return obs.Init.Capabilities == nil || obs.Init.Capabilities.Completions == nil
}

// CompleteServer asks server key to complete an argument of one of its
// prompts or resource templates, by its own names.
func (r *Router) CompleteServer(ctx context.Context, key events.Key, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	c, ok := r.servers.(completer)
	if !ok {
		return nil, fmt.Errorf("mcp server %s: completion is not available", key.Canonical())
	}
	return c.Complete(ctx, key.Canonical(), params)
}
