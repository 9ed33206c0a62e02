package musterevents

import (
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
)

// Options are what a Translator looks up beside the events themselves.
// Each is optional; without it the events that need it say less.
type Options struct {
	// Status returns a resource's status in the v1alpha1 schema
	// (v1alpha1.MCPServerStatus or v1alpha1.WorkflowStatus) as its
	// reconciler last observed it (reconcilers.Registry.Status). Without
	// it no server lifecycle event is told.
	Status func(events.Key) (any, bool)
	// StepCount returns the number of steps of the workflow definition in
	// force, for WorkflowCreated, WorkflowUpdated and the executions.
	StepCount func(events.Key) (int, bool)
	// DefinitionError returns why a resource's current definition is not
	// usable (the index entry's error), or nil: a created or updated
	// definition that is not usable is told as a failed validation.
	DefinitionError func(events.Key) error
	// Listed says the watchers' initial listings are done already: a
	// translator that starts after them (a recorder started on election)
	// sets it, so that the changes it sees are told. Otherwise a
	// ResourceChanged of a source before its IndexSynchronized is the
	// definition found at start, not a change, and is not told.
	Listed bool
}

// Translator tells musterd's events as muster's. It remembers what it
// told of each MCP server, to tell its lifecycle by its transitions; make
// one per consumer with New. It is not safe for concurrent use.
type Translator struct {
	opts    Options
	synced  map[events.Source]bool
	servers map[events.Key]*server
}

// server is what the translator last told of an MCP server.
type server struct {
	state    v1alpha1.MCPServerState
	restarts int
}

// up says whether a server in state s serves its tools.
func up(s v1alpha1.MCPServerState) bool {
	return s == v1alpha1.MCPServerStateRunning || s == v1alpha1.MCPServerStateConnected
}

// New returns a translator.
func New(opts Options) *Translator {
	return &Translator{opts: opts, synced: map[events.Source]bool{}, servers: map[events.Key]*server{}}
}

// Translate returns the muster events that e amounts to, oldest first:
// none for the pipeline's own bookkeeping (triggers, reconcile starts,
// status writes, leadership), which muster has no word for.
func (t *Translator) Translate(e events.Event) []Event {
	var out []Event
	var key events.Key
	emit := func(r Reason, d Data) {
		d.Error = redact.String(d.Error)
		out = append(out, newEvent(e.Metadata().Time, key.Kind, key.Namespace, key.Name, r, d, e.Metadata().CorrelationID))
	}
	if k, ok := e.(events.Keyed); ok {
		key = k.ResourceKey().Canonical()
	}
	switch e := e.(type) {
	case events.IndexSynchronized:
		t.synced[e.Source] = true
	case events.ResourceChanged:
		t.changed(e, emit)
	case events.ResourceSynced:
		if key.Kind == v1alpha1.KindMCPServer {
			if e.Deleted {
				if s := t.servers[key]; s != nil && up(s.state) {
					emit(MCPServerStopped, Data{})
					emit(MCPServerToolsUnavailable, Data{})
				}
				delete(t.servers, key)
				break
			}
			t.transition(key, emit)
		}
	case events.ResourceFailed:
		if key.Kind == v1alpha1.KindMCPServer {
			t.transition(key, emit)
		}
	case events.DefinitionValidated:
		if key.Kind != v1alpha1.KindWorkflow {
			break // muster tells no validation of a server
		}
		if e.Error != "" {
			emit(WorkflowValidationFailed, Data{Operation: e.Request, Error: e.Error})
		} else {
			emit(WorkflowValidationSucceeded, Data{Operation: e.Request})
		}
	case events.WorkflowExecutionStarted:
		emit(WorkflowExecutionStarted, Data{Operation: "execute", StepCount: t.steps(key), ExecutionID: e.ExecutionID})
	case events.WorkflowExecutionFinished:
		emit(WorkflowExecutionTracked, Data{Operation: "execute", ExecutionID: e.ExecutionID})
		if e.Status == "failed" {
			emit(WorkflowExecutionFailed, Data{Operation: "execute", Error: e.Error, ExecutionID: e.ExecutionID})
		} else {
			// muster keeps an execution's duration in milliseconds.
			emit(WorkflowExecutionCompleted, Data{Operation: "execute", StepCount: t.steps(key), ExecutionID: e.ExecutionID,
				Duration: e.Duration.Truncate(time.Millisecond)})
		}
	case events.WorkflowStepStarted:
		if e.Condition != "" {
			emit(WorkflowStepConditionEvaluated, Data{StepID: e.StepID, StepTool: e.Tool, ConditionResult: e.Condition})
		}
		emit(WorkflowStepStarted, Data{StepID: e.StepID, StepTool: e.Tool})
	case events.WorkflowStepFinished:
		switch e.Status {
		case events.StepSkipped:
			emit(WorkflowStepConditionEvaluated, Data{StepID: e.StepID, StepTool: e.Tool, ConditionResult: e.Condition})
			emit(WorkflowStepSkipped, Data{StepID: e.StepID, StepTool: e.Tool, ConditionResult: e.Condition})
		case events.StepFailed:
			emit(WorkflowStepFailed, Data{StepID: e.StepID, StepTool: e.Tool, Error: e.Error, AllowFailure: e.AllowFailure})
		default:
			emit(WorkflowStepCompleted, Data{StepID: e.StepID, StepTool: e.Tool})
		}
	}
	return out
}

// changed tells a definition's change: created, updated or deleted, or,
// when what was written is not usable, its failed validation.
func (t *Translator) changed(e events.ResourceChanged, emit func(Reason, Data)) {
	switch e.Source {
	case events.SourceFilesystem, events.SourceKubernetes:
	default:
		return // a trigger, or a tool that came or went: no definition changed
	}
	if !t.opts.Listed && !t.synced[e.Source] {
		return // found at start
	}
	key := e.Key.Canonical()
	op := string(e.Operation)
	var defErr error
	if e.Operation != events.OperationDelete && t.opts.DefinitionError != nil {
		defErr = t.opts.DefinitionError(key)
	}
	switch key.Kind {
	case v1alpha1.KindMCPServer:
		switch {
		case defErr != nil:
			emit(MCPServerFailed, Data{Operation: op, Error: defErr.Error()})
		case e.Operation == events.OperationCreate:
			emit(MCPServerCreated, Data{Operation: op})
		case e.Operation == events.OperationUpdate:
			emit(MCPServerUpdated, Data{Operation: op})
		case e.Operation == events.OperationDelete:
			emit(MCPServerDeleted, Data{Operation: op})
		}
	case v1alpha1.KindWorkflow:
		switch {
		case defErr != nil:
			emit(WorkflowValidationFailed, Data{Operation: op, Error: defErr.Error()})
		case e.Operation == events.OperationCreate:
			emit(WorkflowCreated, Data{Operation: op, StepCount: t.steps(key)})
		case e.Operation == events.OperationUpdate:
			emit(WorkflowUpdated, Data{Operation: op, StepCount: t.steps(key)})
		case e.Operation == events.OperationDelete:
			emit(WorkflowDeleted, Data{Operation: op})
		}
	}
}

func (t *Translator) steps(key events.Key) int {
	if t.opts.StepCount == nil {
		return 0
	}
	n, _ := t.opts.StepCount(key)
	return n
}

// transition tells what became of an MCP server since the translator last
// looked, by its observed status: muster's lifecycle events of its
// service.
func (t *Translator) transition(key events.Key, emit func(Reason, Data)) {
	if t.opts.Status == nil {
		return
	}
	status, ok := t.opts.Status(key)
	st, isServer := status.(v1alpha1.MCPServerStatus)
	if !ok || !isServer || st.State == "" {
		return
	}
	why := firstLine(st.LastError)
	if st.State == v1alpha1.MCPServerStateDisconnected && why == "" {
		// A remote server not connected, and not for an error: stopped,
		// or never started (autoStart: false).
		st.State = v1alpha1.MCPServerStateStopped
	}
	if st.State == v1alpha1.MCPServerStateConnecting {
		// A remote server's (re)connection attempt: its outcome is what
		// tells, and a reconnect that fails again is no new transition.
		return
	}
	s := t.servers[key]
	if s == nil {
		s = &server{restarts: st.RestartCount}
		t.servers[key] = s
	}
	prev := s.state
	restarted := st.RestartCount > s.restarts
	s.restarts = st.RestartCount
	if st.State == prev && !restarted {
		return
	}
	s.state = st.State
	lost := func() {
		if up(prev) {
			emit(MCPServerToolsUnavailable, Data{})
		}
	}
	switch st.State {
	case v1alpha1.MCPServerStateStarting:
		lost()
		emit(MCPServerStarting, Data{})
		if prev == v1alpha1.MCPServerStateStopped || prev == v1alpha1.MCPServerStateFailed || prev == v1alpha1.MCPServerStateDisconnected {
			emit(MCPServerRestarting, Data{})
		}
	case v1alpha1.MCPServerStateRunning, v1alpha1.MCPServerStateConnected:
		if up(prev) && !restarted {
			return // Running and Connected are one to muster
		}
		if up(prev) {
			emit(MCPServerRestarting, Data{})
		}
		emit(MCPServerStarted, Data{})
		emit(MCPServerToolsDiscovered, Data{})
	case v1alpha1.MCPServerStateStopped:
		if prev == "" {
			return // never started (autoStart: false)
		}
		lost()
		emit(MCPServerStopped, Data{})
	case v1alpha1.MCPServerStateFailed:
		lost()
		emit(MCPServerFailed, Data{Error: why})
	case v1alpha1.MCPServerStateDisconnected:
		lost()
		emit(MCPServerHealthCheckFailed, Data{Error: why})
	case v1alpha1.MCPServerStateAuthRequired:
		lost()
		emit(MCPServerAuthRequired, Data{})
	}
}
