package main

import (
	"log/slog"
	"net/http"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/mcpserve"
	"github.com/musterd/musterd/pkg/router"
)

// addMCP builds the MCP endpoint over the daemon's state and adds the
// component that keeps its exposed set current.
func (d *daemon) addMCP(cfg daemonConfig, log *slog.Logger) error {
	// The router serves the running servers' tools, resources and prompts
	// from the catalogue, and calls into their sessions.
	rt, err := router.New(router.Options{Catalogue: d.Catalogue, Servers: d.Supervisor, Registerer: d.Registry, Logger: log,
		Declared: func(k events.Key) bool { _, ok := d.Index.Get(k); return ok }})
	if err != nil {
		return err
	}
	d.MCP, err = mcpserve.New(mcpserve.Options{
		Backend: rt,
		// The workflows, and the core tools that change definitions and
		// services (core_mcpserver_create, core_service_stop, …).
		Providers:      []mcpserve.Provider{d.Workflows, d.CoreTools},
		Index:          d.Index,
		Statuses:       d.Store,
		ResourceStatus: d.Reconcilers.Status,
		// Availability is judged at each call, as muster does, by the
		// Workflow reconciler's own walk of what a workflow needs: its
		// recorded verdict follows through the pipeline.
		WorkflowAvailability: func(k events.Key) (bool, []string, bool) {
			a, found := d.workflowVerdicts.Availability(k)
			return a.Available, a.MissingTools, found
		},
		ServerTools: func(k events.Key) []string {
			obs, ok := d.Supervisor.Get(k)
			if !ok {
				return nil
			}
			return obs.Tools
		},
		// core_reconcile_status with no name shows the controls'
		// overview, the one GET /api/v1/overview answers.
		Overview:   d.Controls.Overview,
		Events:     d.MusterEvents,
		Leader:     d.leader,
		Token:      cfg.token,
		Config:     func() any { return musterConfig(cfg) },
		Kubernetes: cfg.kube.enabled,
		Version:    version,
		Registerer: d.Registry,
		Logger:     log,
	})
	if err != nil {
		return err
	}
	d.MCPRefresh = mcpserve.NewRefresher(d.Bus, d.MCP)
	// Workflow steps call tools as clients do, through the endpoint: x_…,
	// core_… and other workflows alike.
	d.Workflows.SetCaller(d.MCP)
	// The router knows of a change of the servers' offer first (a server
	// started, stopped, relisted its tools): list_changed need not wait
	// for the reconcile's outcome on the bus.
	rt.OnChange(d.MCPRefresh.Kick)
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

// mux serves the MCP endpoint's paths beside the API, on one listener.
func (d *daemon) mux(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mcp := d.mcpHandler()
	for _, path := range mcpserve.Paths() {
		mux.Handle(path, mcp)
	}
	mux.Handle("/", api)
	return mux
}
