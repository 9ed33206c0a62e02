package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// workflowTools refreshes the workflow engine's tools whenever a workflow
// was reconciled, its verdict possibly changed: the engine then tells the
// MCP endpoint (Options.OnToolsChanged), which tells its clients. And when
// a workflow's definition changes, it has the workflows that call it
// (workflow_<name>) validated again, as the runtime bridge does for the
// workflows naming a server's tools: their verdict (the callee declared,
// no cycle) may have changed with it.
type workflowTools struct {
	bus.Attachment
	b      *bus.Bus
	index  *resources.Index
	engine *workflowrun.Engine
}

var _ lifecycle.Component = (*workflowTools)(nil)

func (w *workflowTools) Name() string { return "workflow-tools" }

func (w *workflowTools) Start(ctx context.Context) error {
	// Reconciles come in bursts (a resync, a server offering tools that
	// many workflows name): the handlers mark, OnIdle refreshes once per
	// burst.
	dirty := false
	mark := func(k events.Key) {
		if k.Kind == v1alpha1.KindWorkflow {
			dirty = true
		}
	}
	// Changes of a definition only: the changes this component publishes
	// itself (SourceDependency) are not followed further, so that two
	// workflows calling each other do not trigger each other for ever.
	changed := map[string]bool{}
	edited := func(e events.ResourceChanged) {
		if e.Key.Kind == v1alpha1.KindWorkflow && e.Source != events.SourceDependency && e.Source != events.SourceServiceState {
			changed[workflow.WorkflowToolPrefix+e.Key.Name] = true
		}
	}
	sub, err := w.b.Subscribe(bus.SubscriberOptions{
		Name:     w.Name(),
		Delivery: bus.Unbounded(),
		Handlers: []bus.Handler{
			bus.On(func(e events.ResourceSynced) { mark(e.Key) }),
			bus.On(func(e events.ResourceFailed) { mark(e.Key) }),
			bus.On(edited),
		},
		OnIdle: func() {
			if len(changed) > 0 {
				w.revalidateCallers(changed)
				clear(changed)
			}
			if dirty {
				dirty = false
				w.engine.Refresh()
			}
		},
	})
	if err != nil {
		return err
	}
	w.Attach(sub)
	w.engine.Refresh()
	<-ctx.Done()
	sub.Unsubscribe()
	<-sub.Done()
	return nil
}

// revalidateCallers publishes a change of every workflow that calls one of
// the workflow tools in changed, other than the changed workflow itself.
func (w *workflowTools) revalidateCallers(changed map[string]bool) {
	corr := events.NewCorrelationID()
	for _, e := range w.index.List(v1alpha1.KindWorkflow) {
		wf, ok := e.Object.(*v1alpha1.Workflow)
		if !ok || wf == nil {
			continue
		}
		for _, tool := range workflow.Tools(wf) {
			if changed[tool] && tool != workflow.WorkflowToolPrefix+e.Key.Name {
				bus.Publish(w.b, events.ResourceChanged{Meta: events.NewMeta(corr), Key: e.Key,
					Operation: events.OperationUpdate, Source: events.SourceDependency})
				break
			}
		}
	}
}

// addWorkflows builds the workflow engine and adds the component that
// keeps its tools current. The endpoint, built next, serves its tools and
// is the router its steps call through.
func (d *daemon) addWorkflows(cfg daemonConfig, log *slog.Logger) error {
	kick := func() {
		if d.MCPRefresh != nil {
			d.MCPRefresh.Kick()
		}
	}
	engine, tools, err := newWorkflowEngine(cfg.stateDir, d.Index, d.Catalogue, d.Reconcilers.Status, d.Bus, d.Registry, kick, log)
	if err != nil {
		// A state dir musterd cannot write (a pod's read-only root, where
		// the config dir is the default state dir) must not stop the
		// daemon: executions are then kept in memory, and lost with it.
		log.Warn("workflow executions are kept in memory only: the state dir is not writable", "error", err)
		if engine, tools, err = newWorkflowEngine("", d.Index, d.Catalogue, d.Reconcilers.Status, d.Bus, d.Registry, kick, log); err != nil {
			return err
		}
	}
	d.Workflows = engine
	return d.Add(tools)
}

// builtinTool reports whether the MCP endpoint serves tool itself (core_…),
// for the workflow reconciler: a step may call it though no server offers
// it.
func (d *daemon) builtinTool(tool string) bool {
	if !strings.HasPrefix(tool, "core_") || d.MCP == nil {
		return false
	}
	for _, t := range d.MCP.Tools() {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// newWorkflowEngine builds the engine that runs workflows, keeping their
// executions under the state dir, publishing its execution events on b,
// and a component that refreshes its tools when workflows are reconciled.
// onToolsChanged is told when the set of workflow tools changed.
func newWorkflowEngine(stateDir string, ix *resources.Index, cat *catalogue.Catalogue, status func(events.Key) (any, bool),
	b *bus.Bus, reg prometheus.Registerer, onToolsChanged func(), log *slog.Logger) (*workflowrun.Engine, *workflowTools, error) {
	engine, err := workflowrun.New(workflowrun.Options{
		Index: ix, Status: status, StateDir: stateDir,
		Publish:        func(e events.Event) { b.Publish(e) },
		OnToolsChanged: onToolsChanged,
		Metrics:        reg,
		Logger:         log,
	})
	if err != nil {
		return nil, nil, err
	}
	return engine, &workflowTools{b: b, index: ix, engine: engine}, nil
}
