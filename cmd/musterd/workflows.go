package main

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// workflowTools refreshes the workflow engine's tools whenever a workflow
// was reconciled, its verdict possibly changed: the engine then tells the
// MCP endpoint (Options.OnToolsChanged), which tells its clients. And when
// a workflow's definition changes, it has the workflows that call it
// (workflow_<name>), directly or through others, validated again, as the
// runtime bridge does for the workflows needing a server's tools: their
// verdict (the callee declared, what it needs offered, no cycle) may have
// changed with it.
type workflowTools struct {
	bus.Attachment
	b      *bus.Bus
	index  *resources.Index
	engine *workflowrun.Engine

	// callers is, per workflow tool (workflow_<name>), the workflows whose
	// definition in force calls it; calls is its inverse. Kept from each
	// workflow's changes, on the subscription's goroutine only, so that a
	// change finds its callers without a scan of every workflow: a scan
	// per burst made a cold start with 10,000 workflows O(n²) (1 s → 5.6 s).
	callers map[string]map[events.Key]bool
	calls   map[events.Key][]string
}

var _ lifecycle.Component = (*workflowTools)(nil)

func (w *workflowTools) Name() string { return "workflow-tools" }

func (w *workflowTools) Start(ctx context.Context) error {
	// Reconciles come in bursts (a resync, a server offering tools that
	// many workflows name): the handlers note the workflows, OnIdle
	// refreshes their tools once per burst, reading only theirs.
	reconciled := map[string]bool{}
	mark := func(k events.Key) {
		if k.Kind == v1alpha1.KindWorkflow {
			reconciled[k.Name] = true
		}
	}
	// Changes of a definition only: the changes this component publishes
	// itself (SourceDependency) are not followed further, so that two
	// workflows calling each other do not trigger each other for ever.
	changed := map[string]bool{}
	edited := func(e events.ResourceChanged) {
		if e.Key.Kind != v1alpha1.KindWorkflow {
			return
		}
		if e.Operation == events.OperationDelete {
			mark(e.Key) // no tool any more, even while its kind's reconciles are disabled
		}
		w.track(e.Key.Canonical())
		if e.Source != events.SourceDependency && e.Source != events.SourceServiceState {
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
			if len(reconciled) > 0 {
				w.engine.RefreshWorkflows(slices.Collect(maps.Keys(reconciled))...)
				clear(reconciled)
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

// track records which workflow tools key's definition in force calls.
func (w *workflowTools) track(key events.Key) {
	for _, tool := range w.calls[key] {
		delete(w.callers[tool], key)
		if len(w.callers[tool]) == 0 {
			delete(w.callers, tool)
		}
	}
	delete(w.calls, key)
	entry, ok := w.index.Get(key)
	wf, _ := entry.Object.(*v1alpha1.Workflow)
	if !ok || wf == nil {
		return
	}
	for _, tool := range workflow.Tools(wf) {
		if !strings.HasPrefix(tool, workflow.WorkflowToolPrefix) {
			continue
		}
		if w.callers[tool] == nil {
			w.callers[tool] = map[events.Key]bool{}
		}
		w.callers[tool][key] = true
		w.calls[key] = append(w.calls[key], tool)
	}
}

// revalidateCallers publishes a change of every workflow that calls one of
// the workflow tools in changed, directly or through other workflows at
// any depth (what a workflow needs is what the workflows it calls need:
// package workflow's needs), other than the changed workflows themselves,
// in the order of their keys. The closure is taken here, at once, because
// the changes published are not followed further.
func (w *workflowTools) revalidateCallers(changed map[string]bool) {
	seen := map[events.Key]bool{}
	var keys []events.Key
	queue := slices.Sorted(maps.Keys(changed))
	for len(queue) > 0 {
		tool := queue[0]
		queue = queue[1:]
		for key := range w.callers[tool] {
			if seen[key] || changed[workflow.WorkflowToolPrefix+key.Name] {
				continue
			}
			seen[key] = true
			keys = append(keys, key)
			queue = append(queue, workflow.WorkflowToolPrefix+key.Name)
		}
	}
	slices.SortFunc(keys, events.CompareKeys)
	corr := events.NewCorrelationID()
	for _, key := range keys {
		bus.Publish(w.b, events.ResourceChanged{Meta: events.NewMeta(corr), Key: key,
			Operation: events.OperationUpdate, Source: events.SourceDependency})
	}
}

// addWorkflows builds the workflow engine and adds the component that
// keeps its tools current. The router, built after, lists its tools and is
// what its steps call through.
func (d *daemon) addWorkflows(cfg daemonConfig, log *slog.Logger) error {
	// A change of the workflows' tools reaches the endpoint as every
	// change of what is exposed does: through the router.
	kick := func() {
		if d.Router != nil {
			d.Router.SourceChanged()
		}
	}
	engine, tools, err := newWorkflowEngine(cfg.stateDir, d.Index, d.Catalogue, d.workflowVerdicts, d.Bus, d.Registry, kick, log)
	if err != nil {
		// A state dir musterd cannot write (a pod's read-only root, where
		// the config dir is the default state dir) must not stop the
		// daemon: executions are then kept in memory, and lost with it.
		log.Warn("workflow executions are kept in memory only: the state dir is not writable", "error", err)
		if engine, tools, err = newWorkflowEngine("", d.Index, d.Catalogue, d.workflowVerdicts, d.Bus, d.Registry, kick, log); err != nil {
			return err
		}
	}
	d.Workflows = engine
	return d.Add(tools)
}

// builtinTool reports whether tool is a core tool, for the workflow
// reconciler: a step may call it though no server offers it.
func (d *daemon) builtinTool(tool string) bool {
	return d.CoreTools != nil && d.CoreTools.Has(tool)
}

// newWorkflowEngine builds the engine that runs workflows, keeping their
// executions under the state dir, publishing its execution events on b,
// and a component that refreshes its tools when workflows are reconciled.
// onToolsChanged is told when the set of workflow tools changed.
func newWorkflowEngine(stateDir string, ix *resources.Index, cat *catalogue.Catalogue, verdicts *workflow.Reconciler,
	b *bus.Bus, reg prometheus.Registerer, onToolsChanged func(), log *slog.Logger) (*workflowrun.Engine, *workflowTools, error) {
	engine, err := workflowrun.New(workflowrun.Options{
		Index: ix, Status: verdicts.Recorded, Valid: verdicts.Valid, StateDir: stateDir,
		// A caller's run is judged by the caller's own view, as
		// core_workflow_available judges it; a run with no caller by the
		// verdict.
		AvailableTo: func(ctx context.Context, k events.Key) (bool, []string) {
			caller, ok := identity.From(ctx)
			if !ok {
				return false, nil
			}
			a, _ := verdicts.AvailabilityFor(k, caller.Owner())
			return a.Available, a.MissingTools
		},
		Publish:        func(e events.Event) { b.Publish(e) },
		OnToolsChanged: onToolsChanged,
		Metrics:        reg,
		Logger:         log,
	})
	if err != nil {
		return nil, nil, err
	}
	return engine, &workflowTools{b: b, index: ix, engine: engine,
		callers: map[string]map[events.Key]bool{}, calls: map[events.Key][]string{}}, nil
}
