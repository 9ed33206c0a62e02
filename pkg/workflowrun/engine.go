package workflowrun

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// Caller calls a tool by its exposed name: x_…, core_… or workflow_…. The
// router (package router) is one; the engine's steps call through it.
type Caller interface {
	CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

// ToolPrefix starts the name of every workflow's tool: workflow_<name>.
const ToolPrefix = "workflow_"

// Defaults of Options.
const (
	DefaultTimeout        = 10 * time.Minute
	DefaultMaxTimeout     = time.Hour
	DefaultConcurrency    = 4
	DefaultMaxResultBytes = 1 << 20
	DefaultMaxRecordBytes = 256 << 10 // muster's
	DefaultCleanupTimeout = time.Minute
	DefaultMaxExecutions  = 1000
	DefaultMaxAge         = 7 * 24 * time.Hour
	DefaultVerdictWait    = 10 * time.Second
	// MaxDepth bounds how deep workflows may call workflows. The validator
	// refuses cycles; this catches one that a definition changed mid-run
	// could still make.
	MaxDepth = 16
)

// Options configures the engine. Zero values take the documented defaults.
type Options struct {
	// Index holds the workflow definitions in force. Required.
	Index *resources.Index
	// Status returns the workflow reconciler's verdict on a workflow
	// (workflow.Reconciler.Recorded, whose lists the engine only reads).
	// Required: a workflow runs only when it says valid, and a call of one
	// that cannot run is answered with what it says.
	Status func(events.Key) (v1alpha1.WorkflowStatus, bool)
	// Valid says whether the reconciler's verdict on a workflow is valid,
	// and whether it has one: all that deciding on the workflow's tool
	// needs (workflow.Reconciler.Valid, which spells nothing out, where
	// Status spells out the lists of a verdict kept compact). Default: read
	// from Status.
	Valid func(events.Key) (valid, known bool)
	// AvailableTo judges, for the caller ctx carries, whether a workflow
	// can run now and which tools it needs that the caller is not offered
	// (workflow.Reconciler.AvailabilityFor with the caller's owner): a
	// workflow on a server users connect to on their own runs for the
	// users connected to it, though the verdict (Status), the catalogue's
	// own, misses the server's tools. Default: none; the verdict decides.
	AvailableTo func(ctx context.Context, key events.Key) (available bool, missingTools []string)
	// StateDir keeps executions in StateDir/executions, one file each.
	// Empty keeps them in memory only.
	StateDir string
	// StepTimeout returns a timeout of a call of tool; 0 for none beyond
	// the run's deadline. Optional: the supervisor already bounds every
	// call to a server by its spec.timeout.
	StepTimeout func(tool string) time.Duration
	// Timeout is a run's overall deadline when the call names none.
	// Default DefaultTimeout.
	Timeout time.Duration
	// MaxTimeout caps a deadline a call asks for with _timeout. Default
	// DefaultMaxTimeout.
	MaxTimeout time.Duration
	// Concurrency bounds the sub-steps of one parallel step running at
	// once. Default DefaultConcurrency.
	Concurrency int
	// ForEachConcurrency bounds the iterations of one forEach running at
	// once. Default 1: in order, one after another, as muster runs them
	// and as a loop of deployments expects.
	ForEachConcurrency int
	// MaxResultBytes bounds a tool's result (its text and structured
	// content); a larger one fails the step. Default DefaultMaxResultBytes.
	MaxResultBytes int
	// MaxRecordBytes bounds an execution record, as JSON: in one larger,
	// each input and result larger than an eighth of it is replaced by
	// TruncationMarker (muster's rule), then the largest left until it
	// fits. The run's own result is whole. Default DefaultMaxRecordBytes.
	MaxRecordBytes int
	// CleanupTimeout bounds the onFailure steps of a run that failed
	// because it was cancelled or ran out of time: they run on a context
	// of their own. Default DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// MaxExecutions and MaxAge bound the executions kept: the oldest beyond
	// MaxExecutions, and those started longer than MaxAge ago, are
	// deleted. Defaults DefaultMaxExecutions and DefaultMaxAge.
	MaxExecutions int
	MaxAge        time.Duration
	// VerdictWait bounds how long a call of a workflow that is declared
	// but not validated yet waits for the reconciler's verdict: muster
	// creates a workflow synchronously, so its clients call one right
	// after core_workflow_create. Default DefaultVerdictWait.
	VerdictWait time.Duration
	// Publish receives an events.WorkflowExecutionStarted and an
	// events.WorkflowExecutionFinished per run, and a WorkflowStepStarted
	// and WorkflowStepFinished per tool step (only the Finished for a step
	// its condition skipped); the wiring puts them on the bus. It must not
	// block. Optional.
	Publish func(events.Event)
	// OnToolsChanged is called after Refresh finds that Tools changed: a
	// workflow became valid or invalid, or its arguments changed. Optional.
	OnToolsChanged func()
	// Metrics registers the execution metrics. Optional.
	Metrics prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Engine runs workflows. It is a tool provider: Tools and CallTool.
type Engine struct {
	opts    Options
	log     *slog.Logger
	caller  atomic.Pointer[callerBox]
	store   *store
	metrics *metrics

	running sync.Map // execution ID → *runner, while the run lasts

	mu    sync.Mutex
	tools toolSet
	// refreshed is closed, and replaced, by every Refresh and
	// RefreshWorkflows: a run waiting for a workflow's first verdict
	// looks again then (awaitVerdict).
	refreshed chan struct{}
}

type callerBox struct{ Caller }

// New returns an engine, having loaded the executions kept under the state
// dir and marked those still in progress as failed: musterd stopped during
// them.
func New(opts Options) (*Engine, error) {
	if opts.Index == nil || opts.Status == nil {
		return nil, errors.New("workflowrun: options Index and Status are required")
	}
	if opts.Valid == nil {
		status := opts.Status
		opts.Valid = func(k events.Key) (bool, bool) {
			st, known := status(k)
			return st.Valid, known
		}
	}
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.MaxTimeout = cmp.Or(opts.MaxTimeout, DefaultMaxTimeout)
	opts.Concurrency = max(1, cmp.Or(opts.Concurrency, DefaultConcurrency))
	opts.ForEachConcurrency = max(1, opts.ForEachConcurrency)
	opts.MaxResultBytes = cmp.Or(opts.MaxResultBytes, DefaultMaxResultBytes)
	opts.MaxRecordBytes = cmp.Or(opts.MaxRecordBytes, DefaultMaxRecordBytes)
	opts.CleanupTimeout = cmp.Or(opts.CleanupTimeout, DefaultCleanupTimeout)
	opts.MaxExecutions = cmp.Or(opts.MaxExecutions, DefaultMaxExecutions)
	opts.MaxAge = cmp.Or(opts.MaxAge, DefaultMaxAge)
	opts.VerdictWait = cmp.Or(opts.VerdictWait, DefaultVerdictWait)
	e := &Engine{opts: opts, log: cmp.Or(opts.Logger, slog.Default()).With("component", "workflowrun"),
		refreshed: make(chan struct{})}
	var err error
	if e.store, err = openStore(opts.StateDir, opts.MaxExecutions, opts.MaxAge, e.log); err != nil {
		return nil, err
	}
	if e.metrics, err = newMetrics(opts.Metrics); err != nil {
		return nil, err
	}
	return e, nil
}

// SetCaller sets the router the steps call tools through. The router
// holds the engine as one of its sources, so it is set after both exist;
// a run before it fails at its first step.
func (e *Engine) SetCaller(c Caller) { e.caller.Store(&callerBox{c}) }

// workflow is a workflow found by name, with the reconciler's verdict.
type workflow struct {
	key    events.Key
	def    *v1alpha1.Workflow
	status v1alpha1.WorkflowStatus
	known  bool // the reconciler has a verdict
}

// lookup finds the workflow called name, with a copy of its definition
// that the run keeps whatever edits arrive.
func (e *Engine) lookup(name string) (workflow, bool) {
	w, ok := e.find(name)
	if ok {
		w.def = w.def.DeepCopy()
	}
	return w, ok
}

// find finds the workflow called name; its def is the index's. Workflows
// are tools by name alone; of two with one name in different namespaces,
// the first key in the index's order wins.
func (e *Engine) find(name string) (workflow, bool) {
	k, def := e.declared(name)
	if def == nil {
		return workflow{}, false
	}
	w := workflow{key: k, def: def}
	w.status, w.known = e.opts.Status(k)
	return w, true
}

// toolDefinition is the definition of name's tool: the index's definition
// of the workflow called name, nil if none is declared or it cannot run.
// It is find with the verdict's validity alone (Options.Valid), since
// only a workflow that cannot run needs its status spelled out: a cold
// start asks this of every workflow it reconciled.
func (e *Engine) toolDefinition(name string) *v1alpha1.Workflow {
	k, def := e.declared(name)
	if def == nil {
		return nil
	}
	if valid, known := e.opts.Valid(k); !valid || !known {
		return nil
	}
	return def
}

// declared returns the first workflow called name, in key order, that
// has a definition in force, and that definition: the index's, to read,
// never to change. def is nil if there is none.
func (e *Engine) declared(name string) (k events.Key, def *v1alpha1.Workflow) {
	for _, k := range e.opts.Index.Named(v1alpha1.KindWorkflow, name) {
		obj, _ := e.opts.Index.Object(k)
		if def, _ := obj.(*v1alpha1.Workflow); def != nil {
			return k, def
		}
	}
	return events.Key{}, nil
}

// awaitVerdict looks name up again after each Refresh or
// RefreshWorkflows, until the reconciler has a verdict on it, it is no
// longer declared, ctx ends or Options.VerdictWait passes; it returns the
// last lookup.
func (e *Engine) awaitVerdict(ctx context.Context, name string) (workflow, bool) {
	timer := time.NewTimer(e.opts.VerdictWait)
	defer timer.Stop()
	for {
		e.mu.Lock()
		refreshed := e.refreshed
		e.mu.Unlock()
		w, ok := e.lookup(name)
		if !ok || w.known {
			return w, ok
		}
		select {
		case <-refreshed:
		case <-ctx.Done():
			return w, ok
		case <-timer.C:
			return w, ok
		}
	}
}

// availableTo says why w cannot run for the caller ctx carries, or nil:
// the caller's own judgement (Options.AvailableTo) when it finds w can run
// or names the tools the caller lacks, else the verdict's.
func (e *Engine) availableTo(ctx context.Context, w workflow) error {
	if e.opts.AvailableTo != nil {
		available, missing := e.opts.AvailableTo(ctx, w.key)
		if available {
			return nil
		}
		if len(missing) > 0 {
			return &UnavailableError{Workflow: w.def.Name, Missing: missing}
		}
	}
	return w.available()
}

// available says why w cannot run, or nil.
func (w workflow) available() error {
	switch {
	case !w.known:
		return &UnavailableError{Workflow: w.def.Name, Reason: "not validated yet"}
	case w.status.Valid:
		return nil
	case len(w.status.MissingTools) > 0:
		return &UnavailableError{Workflow: w.def.Name, Missing: w.status.MissingTools}
	case len(w.status.ValidationErrors) > 0:
		return &UnavailableError{Workflow: w.def.Name, Reason: w.status.ValidationErrors[0]}
	}
	return &UnavailableError{Workflow: w.def.Name}
}

// Tools returns workflow_<name> for every valid workflow, sorted by name:
// the tools as of the last Refresh or
// RefreshWorkflows. A workflow's tool is built once per definition and
// returned as the same pointer until the definition changes, so that the
// endpoint compares tools without encoding them: with 100,000 workflows,
// encoding them all after every change was most of a cold start's
// endpoint work. The slice and the tools are shared: never change them.
func (e *Engine) Tools() []*mcp.Tool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tools.sorted()
}

// Claims reports whether name is the tool of a declared workflow, valid
// or not: a call of an invalid one is answered, saying why it cannot run
// (router.Claimer).
func (e *Engine) Claims(name string) bool {
	wf, ok := strings.CutPrefix(name, ToolPrefix)
	if !ok {
		return false
	}
	_, declared := e.find(wf)
	return declared
}

// Refresh reads every declared workflow's definition and verdict again,
// and calls Options.OnToolsChanged if Tools changed (a workflow became
// valid or invalid, its arguments changed), or if it is the first Refresh.
// The wiring calls it once at start, and RefreshWorkflows after each
// reconcile.
func (e *Engine) Refresh() {
	keys := e.opts.Index.Keys(v1alpha1.KindWorkflow)
	e.mu.Lock()
	changed := !e.tools.listed
	e.tools.listed = true
	for name := range e.tools.byName { // the workflows no longer declared
		if e.toolDefinition(name) == nil {
			changed = e.tools.set(name, nil) || changed
		}
	}
	for _, k := range keys {
		changed = e.tools.set(k.Name, e.toolDefinition(k.Name)) || changed
	}
	e.mu.Unlock()
	e.toolsChanged(changed)
}

// RefreshWorkflows reads the definition and verdict of the workflows
// called names again, and calls Options.OnToolsChanged if Tools changed.
// It costs a lookup a name, however many workflows are declared.
func (e *Engine) RefreshWorkflows(names ...string) {
	changed := false
	e.mu.Lock()
	for _, name := range names {
		changed = e.tools.set(name, e.toolDefinition(name)) || changed
	}
	e.mu.Unlock()
	e.toolsChanged(changed)
}

func (e *Engine) toolsChanged(changed bool) {
	e.mu.Lock()
	close(e.refreshed)
	e.refreshed = make(chan struct{})
	e.mu.Unlock()
	if changed && e.opts.OnToolsChanged != nil {
		e.opts.OnToolsChanged()
	}
}

// CallTool runs workflow_<name>. A workflow
// that fails, or cannot run, is a result with IsError set, its text saying
// why; an unknown tool is an error.
func (e *Engine) CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	switch {
	case strings.HasPrefix(name, ToolPrefix):
		return e.run(ctx, strings.TrimPrefix(name, ToolPrefix), args, progress), nil
	}
	return nil, fmt.Errorf("workflowrun: unknown tool %q", name)
}

// depthKey carries the nesting depth of workflows calling workflows.
type depthKey struct{}

func textResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}

func jsonResult(v any, isError bool) *mcp.CallToolResult {
	data, err := json.Marshal(v)
	if err != nil {
		return textResult(fmt.Sprintf("workflowrun: encoding the result: %v", err), true)
	}
	return textResult(string(data), isError)
}
