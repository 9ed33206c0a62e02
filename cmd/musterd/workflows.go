package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// serverTimeout returns the timeout of the server that offers tool, as its
// spec in force says (muster's default when unset): how long a workflow
// step's call of it may take.
func serverTimeout(ix *resources.Index, cat *catalogue.Catalogue) func(string) time.Duration {
	return func(tool string) time.Duration {
		key, ok := cat.Lookup(tool)
		if !ok {
			return 0
		}
		entry, ok := ix.Get(key)
		if !ok {
			return 0
		}
		srv, ok := entry.Object.(*v1alpha1.MCPServer)
		if !ok || srv == nil {
			return 0
		}
		secs := srv.Spec.Timeout
		if secs <= 0 {
			secs = v1alpha1.DefaultMCPServerTimeout
		}
		return time.Duration(secs) * time.Second
	}
}

// workflowTools refreshes the workflow engine's tools whenever a workflow
// was reconciled, its verdict possibly changed: the engine then tells the
// MCP endpoint (Options.OnToolsChanged), which tells its clients.
type workflowTools struct {
	bus.Attachment
	b      *bus.Bus
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
	sub, err := w.b.Subscribe(bus.SubscriberOptions{
		Name:     w.Name(),
		Delivery: bus.Unbounded(),
		Handlers: []bus.Handler{
			bus.On(func(e events.ResourceSynced) { mark(e.Key) }),
			bus.On(func(e events.ResourceFailed) { mark(e.Key) }),
		},
		OnIdle: func() {
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

// newWorkflowEngine builds the engine that runs workflows, keeping their
// executions under the state dir, publishing its execution events on b,
// and a component that refreshes its tools when workflows are reconciled.
// onToolsChanged is told when the set of workflow tools changed.
func newWorkflowEngine(stateDir string, ix *resources.Index, cat *catalogue.Catalogue, status func(events.Key) (any, bool),
	b *bus.Bus, reg prometheus.Registerer, onToolsChanged func(), log *slog.Logger) (*workflowrun.Engine, *workflowTools, error) {
	engine, err := workflowrun.New(workflowrun.Options{
		Index: ix, Status: status, StateDir: stateDir,
		StepTimeout:    serverTimeout(ix, cat),
		Publish:        func(e events.Event) { b.Publish(e) },
		OnToolsChanged: onToolsChanged,
		Metrics:        reg,
		Logger:         log,
	})
	if err != nil {
		return nil, nil, err
	}
	return engine, &workflowTools{b: b, engine: engine}, nil
}
