package main

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/mcpserve"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/ui"
)

// addMCP builds the router, the one way in for every tool call, and the
// MCP endpoint over it, and adds the component that keeps the endpoint's
// exposed set current.
func (d *daemon) addMCP(cfg daemonConfig, log *slog.Logger) error {
	// The router lists and calls the core tools first, then the running
	// servers' tools (from the catalogue, through their sessions), then
	// the workflows.
	rt, err := router.New(router.Options{Catalogue: d.Catalogue, Servers: d.Supervisor, Registerer: d.Registry, Logger: log,
		Declared: func(k events.Key) bool { _, ok := d.Index.Get(k); return ok },
		Core:     d.CoreTools,
		Sources:  []router.Source{d.Workflows},
		// auth://status: the caller's standing with each server.
		OwnResources: d.CoreTools,
		// Each interval with calls, once over, names its server on the
		// bus: the live page reads its calls again (calls.go).
		OnCallsCounted: d.publishCalls,
	})
	if err != nil {
		return err
	}
	d.Router = rt
	// Workflow steps call tools as clients do, through the router: x_…,
	// core_… and other workflows alike.
	d.Workflows.SetCaller(rt)
	d.MCP, err = mcpserve.New(mcpserve.Options{
		Backend: rt,
		Leader:  d.leader,
		Token:   cfg.token,
		// With OAuth on, a caller's token names its user (inbound.go).
		Authenticator: d.callers(cfg.token),
		Version:       version,
		Registerer:    d.Registry,
		Logger:        log,
		// What a session owned (its own connections, their tools, its
		// tokens) goes with it.
		OnOwnerGone: d.Logins.ownerGone,
	})
	if err != nil {
		return err
	}
	// Every change of what is exposed reaches the endpoint through the
	// router: the catalogue's (a server started, stopped, relisted its
	// tools, resources or prompts) and its sources' (the workflows').
	d.MCPRefresh = mcpserve.NewRefresher(d.MCP)
	rt.OnChange(d.MCPRefresh.Kick)
	// A change of one user's own tools is told to that user's sessions
	// alone.
	rt.OnOwnerChange(func(owner string) { d.MCP.ToolsChangedFor(owner) })
	return d.Add(d.MCPRefresh)
}

// mcpHandler is the MCP endpoint's handler; its first request engages the
// collector's heap floor (gcfloor.go), which exists for the go-sdk's
// garbage and would otherwise cost every daemon its megabytes at idle.
func (d *daemon) mcpHandler() http.Handler {
	h := d.MCP.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		engageGCFloor()
		h.ServeHTTP(w, r)
	})
}

// mux serves the MCP endpoint's paths and the live page beside the API,
// on one listener: the page is guarded as the API is (the listener is
// loopback unless -allow-remote), and what it reads through the API needs
// the token as any client's reads do.
func (d *daemon) mux(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mcp := d.mcpHandler()
	for _, path := range mcpserve.Paths() {
		mux.Handle(path, mcp)
	}
	d.mountOAuth(mux)
	page := ui.Handler()
	mux.Handle(ui.Prefix, page)
	mux.Handle(strings.TrimSuffix(ui.Prefix, "/"), page)
	mux.Handle("/", api)
	return mux
}

// mountOAuth serves what OAuth needs beside the endpoint, never behind a
// token: musterd's protected-resource metadata, which tells a client
// where to get one (inbound.go), and the users' logins to protected
// servers, the browser's way in (logins.go).
func (d *daemon) mountOAuth(mux *http.ServeMux) {
	d.Inbound.mount(mux)
	for _, path := range d.Logins.paths() {
		mux.Handle(path, d.Logins.client.Handler())
	}
}

// mcpOnly is the handler of -mcp-listen's listener: the endpoint, and
// what OAuth needs beside it (a pod's Service may be the only way in).
func (d *daemon) mcpOnly() http.Handler {
	mux := http.NewServeMux()
	d.mountOAuth(mux)
	mux.Handle("/", d.mcpHandler())
	return mux
}
