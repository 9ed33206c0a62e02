package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/catalogue"
)

// Source offers exposed tools beside the managed servers: the core tools
// (package coretools), the workflows (package workflowrun).
type Source interface {
	// Tools returns the source's tools under their exposed names, with
	// their definitions. A source returns the same *mcp.Tool for a tool
	// that did not change, and never changes one it returned.
	Tools() []*mcp.Tool
	// CallTool calls one of them. An error means the call could not be
	// made; a failure of the tool is a result with IsError. progress is
	// nil when the caller asked for no progress notifications.
	CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

// Claimer is a Source that also answers for names it does not list: a
// workflow that is declared but cannot run is no tool, yet its call must
// say why, as muster's does ("workflow X is not available (missing
// required tools: …)"), not that no such tool exists. The router itself
// claims the tools of servers that stopped running (Claims).
type Claimer interface {
	Claims(name string) bool
}

// ErrUnknownTool is matched (errors.Is) by CallTool's error for a name
// nothing exposes or claims; so is catalogue.ErrUnknownTool.
var ErrUnknownTool = errors.New("unknown tool")

// unknownToolError is the error of a call of a name nothing exposes or
// claims. It says "tool not found" as muster's does, for the clients and
// scripts that look for those words.
type unknownToolError struct{ name string }

func (e unknownToolError) Error() string {
	return fmt.Sprintf("%s %q: tool not found: no core tool, running server or workflow offers it", ErrUnknownTool, e.name)
}

func (e unknownToolError) Is(target error) bool {
	return target == ErrUnknownTool || target == catalogue.ErrUnknownTool
}

// Sources, as a call's log line names them.
const (
	sourceCore     = "core"
	sourceServer   = "server"
	sourceProvider = "provider"
)

// toolRoute says who serves an exposed tool: source, or the managed servers
// when source is nil.
type toolRoute struct {
	tool   *mcp.Tool
	source Source
	label  string
}

// exposed is one exposed set: every tool, sorted by name.
type exposed struct {
	tools  []*mcp.Tool
	routes map[string]toolRoute
	// offers is what the sources offered, in compute's order.
	offers [][]*mcp.Tool
}

// Tools returns the exposed set: the core tools, the running servers'
// tools and the other sources' tools, sorted by name; a name is served by
// the first of them to offer it (a later one is skipped with a warning).
// It recomputes the set when a source's offer changed. The definitions
// are shared: never change one.
func (r *Router) Tools() []*mcp.Tool {
	r.exposedMu.Lock()
	defer r.exposedMu.Unlock()
	old := r.exposed.Load()
	if next := r.compute(old, r.cat.Definitions()); next != old {
		r.exposed.Store(next)
		return next.tools
	}
	return old.tools
}

// compute builds the exposed set, servers being the catalogue's
// definitions in the caller's view. If every source offers the very tools
// it offered for old, old is returned as it is: a reconcile that changed
// no tool (most of them) costs a comparison of pointers, not a new set of
// 100,000 routes.
func (r *Router) compute(old *exposed, servers []*mcp.Tool) *exposed {
	var offers [][]*mcp.Tool
	if r.core != nil {
		offers = append(offers, r.core.Tools())
	}
	offers = append(offers, servers)
	for _, s := range r.sources {
		offers = append(offers, s.Tools())
	}
	if slices.EqualFunc(offers, old.offers, slices.Equal) {
		return old
	}
	next := &exposed{routes: map[string]toolRoute{}, offers: offers}
	add := func(t *mcp.Tool, rt toolRoute) {
		if t == nil || t.Name == "" {
			return
		}
		if prev, dup := next.routes[t.Name]; dup {
			r.log.Warn("tool exposed twice: the first source keeps it", "tool", t.Name, "kept", prev.label, "skipped", rt.label)
			return
		}
		rt.tool = t
		next.routes[t.Name] = rt
		next.tools = append(next.tools, t)
	}
	i := 0
	if r.core != nil {
		for _, t := range offers[0] {
			add(t, toolRoute{source: r.core, label: sourceCore})
		}
		i++
	}
	for _, t := range offers[i] {
		add(t, toolRoute{label: sourceServer})
	}
	for j, s := range r.sources {
		for _, t := range offers[i+1+j] {
			add(t, toolRoute{source: s, label: sourceProvider})
		}
	}
	slices.SortFunc(next.tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return next
}

// route returns who serves name: an exposed tool, or else a name the
// last Tools did not see yet but a source offers now (so a tool is
// callable as soon as its source offers it), or else a name a source (or
// the router, for a server gone) claims. A miss costs a look at each
// source's offer, in the exposed set's order, and never recomputes the
// set: a client calling names that do not exist cannot make the router
// sort 100,000 tools per call.
func (r *Router) route(view catalogue.View, name string) (toolRoute, bool) {
	if rt, ok := r.exposedOf(view).routes[name]; ok {
		return rt, true
	}
	if r.core != nil && offers(r.core, name) {
		return toolRoute{source: r.core, label: sourceCore}, true
	}
	if view.Has(name) {
		return toolRoute{label: sourceServer}, true
	}
	for _, s := range r.sources {
		if offers(s, name) {
			return toolRoute{source: s, label: sourceProvider}, true
		}
	}
	for _, s := range r.sources {
		if c, ok := s.(Claimer); ok && c.Claims(name) {
			return toolRoute{source: s, label: sourceProvider}, true
		}
	}
	if _, gone := view.Gone(name); gone {
		return toolRoute{label: sourceServer}, true
	}
	return toolRoute{}, false
}

// offers reports whether s offers the tool name now.
func offers(s Source, name string) bool {
	return slices.ContainsFunc(s.Tools(), func(t *mcp.Tool) bool { return t != nil && t.Name == name })
}

// CallTool calls the exposed tool name, whoever serves it: a core tool,
// a running server's tool or another source's (a workflow). It is the one
// way in for every call: the endpoint's, and the workflow steps'.
//
// An error means the call could not be made or completed: an unknown tool
// (ErrUnknownTool, at once), or what the serving source says (for a
// server's tool: catalogue.ErrUnknownTool, "server not found: …", a
// family's instance argument missing or wrong, a server not running or not
// ready within its wait, dead or stopped mid-call, the caller's
// cancellation). A tool-level failure is a result with IsError. The result
// is the source's, unchanged; a nil result is an empty text. progress, if
// set, gets the tool's progress notifications; their ProgressToken is nil,
// for the caller to set its own. args is not changed.
func (r *Router) CallTool(ctx context.Context, name string, args map[string]any,
	progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	view := r.viewOf(ctx) // owners.go: the caller's
	rt, ok := r.route(view, name)
	if !ok {
		err := unknownToolError{name}
		if r.debug(ctx) {
			r.logCall(ctx, callLog{tool: name, source: "none", args: args}, resultError, 0, err)
		}
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	if _, has := CallerOf(ctx); !has {
		ctx = WithCaller(ctx, Caller{})
	}
	start := time.Now()
	l := callLog{tool: name, source: rt.label, args: args}
	var (
		res *mcp.CallToolResult
		err error
	)
	if rt.source != nil {
		res, err = rt.source.CallTool(ctx, name, args, progress)
	} else {
		res, err = r.callServer(ctx, view, name, args, progress, &l)
	}
	if err == nil && res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ""}}}
	}
	if r.debug(ctx) {
		r.logCall(ctx, l, outcome(res, err), time.Since(start), err)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// outcome classifies a call's end, as the metrics and the log name it.
func outcome(res *mcp.CallToolResult, err error) string {
	switch {
	case err != nil:
		return resultError
	case res != nil && res.IsError:
		return resultToolError
	}
	return resultOK
}
